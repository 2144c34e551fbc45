"""Redaction of secrets and identities in log text, for reports attached to bug tickets.

People attach logs and reports to public tickets; nobody should leak a token or an
internal hostname by doing so. `Redactor` replaces each secret or identity with a stable
pseudonym (``host-1``, ``ip-2``, ``user-1``, ``<hf-token-1>``): the same value always gets
the same pseudonym within one run, so correlation across ranks and lines survives.

What is redacted (see `KINDS`): Hugging Face tokens, OpenAI-style ``sk-`` keys, bearer
tokens and ``Authorization`` headers, ``--api-key``/``api_key=`` values, passwords in
URLs and ``password=`` assignments, e-mail addresses, IPv4/IPv6 addresses, hostnames (NCCL
``host:pid:tid`` prefixes, ``ip=`` fields, URLs, pdsh/srun ``node:`` prefixes, the journald
host, ``--host``/``MASTER_ADDR`` style values, c10d ``[host]:port``) and user names in
home directories (``/home/alice/``, ``/Users/alice/``, ``C:\\Users\\alice\\``).

What is deliberately kept: timestamps, version numbers, ``TP0``-style rank tags, CUDA
device ids, PCI bus ids (``0000:3d:00``), tensor sizes, ``127.0.0.1``, ``0.0.0.0``,
``::1``, ``localhost`` and well-known public hosts (huggingface.co, github.com, ...):
they carry diagnostic meaning and are not secrets.

Every pattern is linear-time: bounded repetitions only, no nested quantifiers that could
backtrack catastrophically on a 100 KB line.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from analyzer.parse.framing import LOOKS_LIKE_RECORD

# kind -> how its pseudonyms look ({n} is the per-kind counter)
KINDS: dict[str, str] = {
    "hf-token": "<hf-token-{n}>",
    "openai-key": "<openai-key-{n}>",
    "bearer-token": "<bearer-token-{n}>",
    "auth-header": "<auth-header-{n}>",
    "api-key": "<api-key-{n}>",
    "password": "<password-{n}>",
    "cloud-key": "<cloud-key-{n}>",
    "private-key": "<private-key-{n}>",
    "email": "email-{n}",
    "ip": "ip-{n}",
    "hostname": "host-{n}",
    "k8s-pod": "pod-{n}",
    "k8s-namespace": "namespace-{n}",
    "user": "user-{n}",
}
LABELS: dict[str, str] = {
    "hf-token": "Hugging Face tokens",
    "openai-key": "OpenAI-style API keys",
    "bearer-token": "bearer tokens",
    "auth-header": "Authorization header values",
    "api-key": "API keys / tokens in arguments",
    "password": "passwords",
    "cloud-key": "cloud and service tokens (AWS, GitHub, Slack, Google, Azure, NVIDIA, Stripe, "
                 "JWTs, signed URLs)",
    "private-key": "private-key lines (PEM bodies)",
    "email": "e-mail addresses",
    "ip": "IP addresses",
    "hostname": "hostnames",
    "k8s-pod": "Kubernetes pod names",
    "k8s-namespace": "Kubernetes namespaces",
    "user": "user names (home paths and where they recur)",
}

KEEP_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "none", "null",
                        "true", "false", "auto", "any", "all", "default", "unknown", "host"})
KEEP_IPS = frozenset({"127.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::"})
# Well-known public hosts: naming them leaks nothing and tells the reader where a download
# or a docs link went. Matched as the host itself or any subdomain of it.
PUBLIC_DOMAINS = ("huggingface.co", "hf.co", "github.com", "githubusercontent.com",
                  "pytorch.org", "python.org", "pypi.org", "nvidia.com", "vllm.ai",
                  "sglang.ai", "readthedocs.io", "readthedocs.org", "docker.io", "docker.com",
                  "ubuntu.com", "debian.org", "google.com", "googleapis.com", "openai.com",
                  "anthropic.com", "microsoft.com", "example.com", "example.org", "ray.io",
                  "anaconda.org", "conda.io", "wandb.ai", "modelscope.cn", "amd.com",
                  "kernel.org", "ngc.nvidia.com")
# systemd unit suffixes: "user@1000.service" is a unit, not an e-mail address
UNIT_SUFFIXES = frozenset({"service", "slice", "scope", "socket", "mount", "target", "timer",
                           "device", "swap", "path", "automount"})
# Already a pseudonym: never redact our own output a second time.
PSEUDONYM = re.compile(r"(?:host|ip|user|email|pod|namespace)-\d{1,9}\Z")
# the namespaces every cluster has: naming them says nothing about whose cluster it is
KEEP_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# account names every image or CI runner has: seen in /home/NAME, not worth hunting elsewhere
GENERIC_USERS = frozenset({"root", "ubuntu", "user", "admin", "ec2-user", "runner", "jovyan",
                           "coder", "centos", "debian", "fedora", "azureuser", "cloud-user",
                           "vscode", "codespace", "nobody", "work", "shared", "public",
                           "default", "test", "home", "data"})
NOT_SECRET = frozenset({"none", "null", "nil", "", "false", "true", "***", "empty", "<none>",
                        "unset", "n/a", "0", "''", '""'})

# ------------------------------------------------------------------------------ patterns
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?!\.?\d)(?!\w)")
_H16 = r"[0-9A-Fa-f]{1,4}"
IPV6 = re.compile(
    rf"(?<![\w:.])(?:(?:{_H16}:){{7}}{_H16}|(?:{_H16}:){{1,6}}(?::{_H16}){{1,6}})(?![\w:])")
# Context words that make a dotted quad a version (cuDNN 9.1.0.70, pkg==1.2.3.4), not an IP.
VERSION_CONTEXT = re.compile(r"(?i)(?:[=<>~!]=|version\s?:?\s?|cudnn\s?|v)\Z")

HF_TOKEN = re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{20,200}(?![A-Za-z0-9])")
OPENAI_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,200}(?![A-Za-z0-9_-])")
BEARER = re.compile(r"(?i)(\bbearer\s{1,4})([A-Za-z0-9._~+/=-]{8,4096})")
AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?)(?!bearer\s)"
    r"((?:basic|token|digest|negotiate)\s{1,4})?([^\s\"',;}]{4,4096})")
_SECRET_NAMES = (r"api[-_]?key|hf[-_]token|hub[-_]token|hugging[-_]?face[-_]hub[-_]token|"
                 r"access[-_]token|auth[-_]token|api[-_]token|secret[-_]key|client[-_]secret|"
                 r"aws[-_]secret[-_]access[-_]key|private[-_]key|secret|password|passwd|token")
_VALUE = r"(?:'([^'\n]{1,512})'|\"([^\"\n]{1,512})\"|([^\s'\",;)}\]]{1,512}))"
# --api-key VALUE / --api-key=VALUE (command lines, argument dumps)
SECRET_FLAG = re.compile(rf"(?i)(?<![\w-])(--(?:{_SECRET_NAMES})(?:=|\s{{1,4}}))(?!-){_VALUE}")
# api_key='…', "api_key": "…", HF_TOKEN=…, password: … ("token" alone is too common here)
_ASSIGN_NAMES = _SECRET_NAMES.replace("|token", "")
SECRET_ASSIGN = re.compile(
    rf"(?i)(?<![A-Za-z0-9])((?:{_ASSIGN_NAMES})[\"']?\s{{0,3}}[:=]\s{{0,3}}){_VALUE}")
HOST_PID = re.compile(r"[A-Za-z][\w.-]{0,252}:\d{1,10}\Z")

# The token-shaped secrets of the services these jobs talk to, by their documented formats
# (the same kinds gitleaks and detect-secrets look for). Each entry: a cheap substring that
# must occur, the pattern, and the group that holds the secret (0: the whole match).
SECRET_CATALOGUE: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("A", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}"
                     r"(?![A-Z0-9])"), 0),  # AWS access key id
    ("_", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|"
                     r"github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"), 0),  # GitHub
    ("xox", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,250}"), 0),  # Slack
    ("hooks.slack.com", re.compile(r"(?<=hooks\.slack\.com/)services/[A-Za-z0-9/_-]{10,250}"),
     0),
    ("eyJ", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,4096}"
                       r"\.[A-Za-z0-9_-]{8,4096}"), 0),  # a JWT, wherever it is
    ("AIza", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), 0),
    ("nvapi-", re.compile(r"(?<![A-Za-z0-9_-])nvapi-[A-Za-z0-9_-]{20,200}"), 0),  # NVIDIA
    ("k_", re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,200}"), 0),  # Stripe
    ("AccountKey=", re.compile(r"AccountKey=([^;\s\"']{8,512})"), 1),  # Azure storage
    ("SharedAccessKey=", re.compile(r"SharedAccessKey=([^;\s\"']{8,512})"), 1),
    ("X-Amz-", re.compile(r"(?i)X-Amz-(?:Signature|Security-Token|Credential)=([^&\s\"']{8,4096})"),
     1),  # S3 presigned URLs
    ("sig=", re.compile(r"[?&]sig=([A-Za-z0-9%+/=]{16,512})"), 1),  # Azure SAS
    ("wandb", re.compile(r"\bwandb login\s+(?:--relogin\s+)?([0-9a-f]{40})\b"), 1),
    ("login", re.compile(r"\bdocker login\b[^\n]*?\s-p\s+(\S+)"), 1),
    ("password", re.compile(r"\blogin\s+\S+\s+password\s+(\S+)"), 1),  # a netrc line
    ("ookie", re.compile(r"(?i)\b(?:set-)?cookie:\s*(\S.{0,4095})"), 1),  # a Cookie header
)
# names shaped like files, model ids or versioned packages, never host labels
NOT_A_HOST = re.compile(r"(?i)\.(?:safetensors|bin|pt|pth|gguf|json|py|txt|log|whl|tar|gz|so)\Z|"
                        r"-of-\d|\d+\.\d+[\w.]*-|-\d+\.\d+|\d[bm]\Z")
# a version number after a product name ("TensorRT 10.0.1.6", "driver 535.104.05.1")
NAMED_VERSION = re.compile(r"(?i)(?:tensorrt|trt|cudnn|cuda|driver|nccl|rccl|rocm|cann|"
                           r"version|release|build)[\s:=v]{1,3}\Z")
PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")
PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")
# a parsed argument's name, fullmatched: `api_key`, and prefixed ones (`admin_api_key`,
# `hub_private_key`), which the HTML environment table otherwise printed in clear
SECRET_KEY = re.compile(r"(?:[a-z0-9]{1,32}_){0,4}(?:" + _ASSIGN_NAMES.replace("[-_]", "_") + ")")
URL = re.compile(
    r"(?i)\b((?:https?|wss?|tcp|grpc|redis|rediss|nats|s3|gs|ftp|sftp|ssh|amqp|postgres(?:ql)?|"
    r"mysql|mongodb(?:\+srv)?)://)"
    r"(?:([^\s:/@'\"<>]{1,128})(?::([^\s/@'\"<>]{0,256}))?@)?"
    r"(\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9][\w.-]{0,252})")
EMAIL = re.compile(
    r"(?<![\w.+-])([A-Za-z0-9][\w.+-]{0,63})@([A-Za-z0-9][A-Za-z0-9-]{0,62}"
    r"(?:\.[A-Za-z0-9-]{1,63}){1,8})(?![\w-])")
# NCCL / mpirun "host:pid:tid [dev]" record prefix
NCCL_PREFIX = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]{0,252}):(\d{1,10}):(\d{1,10}) \[\d{1,4}\]")
# pdsh / srun --label "gpu-node-5: " at line start
PDSH = re.compile(r"^([a-z][\w.-]{0,62}):(?= |$)")
# journald / syslog "Aug 19 18:30:22 host unit[pid]: " (and the RFC 3339 short-iso variant)
JOURNALD = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[\d.,]{0,10}"
    r"(?:Z|[+-]\d\d:?\d\d)) ([\w.-]{1,253}) [\w.@/-]{1,128}(?:\[\d{1,10}\])?: ")
IP_FIELD = re.compile(r"(?<![\w-])ip=([A-Za-z][\w.-]{0,252})")
HOST_ASSIGN = re.compile(
    r"(?i)(?<![\w-])((?:--(?:host|hostname|master[-_]addr|dist[-_]init[-_]addr|"
    r"rdzv[-_]endpoint|node[-_]ip[-_]address)(?:=|\s{1,4}))|"
    r"(?:hostname|host|master_addr|dist_init_addr|rdzv_endpoint|node_ip_address|nodename)"
    r"[\"']?\s{0,3}[:=]\s{0,3}[\"']?)([A-Za-z][\w.-]{0,252})")
BRACKET_HOST = re.compile(r"\[([A-Za-z][\w.-]{0,252})\]:(\d{2,5})(?!\d)")
CONNECT_TUPLE = re.compile(r"(?i)(\bconnect(?:ing)? to \()([A-Za-z][\w.-]{0,252})(, \d{1,5}\))")
HOME = re.compile(r"(/home/|/Users/|[A-Za-z]:\\Users\\|[A-Za-z]:/Users/)([A-Za-z0-9._-]{1,64})"
                  r"(?=[/\\\s'\":,;)\]]|$)")
# Kubernetes: `kubectl logs --prefix` ("[pod/NAME/CONTAINER] "), `pod/NAME`, `pods "NAME"`,
# the kubelet's "NAME_NAMESPACE(UID)", `kubectl describe`'s "Name:"/"Namespace:" rows, the
# -n/--namespace flag of kubectl/helm/oc, `namespace: X` fields and SERVICE.NAMESPACE.svc
KUBECTL_PREFIX = re.compile(r"\[pod/([a-z0-9][a-z0-9.-]{0,252})/[a-z0-9][a-z0-9-]{0,62}\]")
POD_WORD = re.compile(r"\bpods?(?:/|\s{1,4}\"?)([a-z0-9][a-z0-9.-]{0,252}[a-z0-9])(?![\w.-])")
KUBELET_REF = re.compile(r"\b([a-z0-9][a-z0-9.-]{0,252})_([a-z0-9][a-z0-9-]{0,62})"
                         r"\([0-9a-f]{8}-[0-9a-f-]{4,64}\)")
DESCRIBE_NAME = re.compile(r"^Name:\s{2,64}([a-z0-9][a-z0-9.-]{0,252})\s*$")
NAMESPACE_FIELD = re.compile(r"(?i)(?:^Namespace:\s{1,64}|\bnamespace[\"']?\s{0,3}[:=]\s{0,3}"
                             r"[\"']?)([a-z0-9][a-z0-9-]{0,62})(?![\w.-])")
NAMESPACE_FLAG = re.compile(r"(?<!\S)(?:-n|--namespace)(?:=|\s{1,4})([a-z0-9][a-z0-9-]{0,62})"
                            r"(?![\w.-])")
KUBE_COMMAND = re.compile(r"\b(?:kubectl|helm|oc)\s")
SERVICE_NAMESPACE = re.compile(r"(?<![\w-])[a-z0-9][a-z0-9-]{0,62}\.([a-z0-9][a-z0-9-]{0,62})"
                               r"\.svc\b")
# a Deployment's pod anywhere: NAME-<replicaset hash>-<5>, both in Kubernetes' vowel-free
# alphabet (bcdfghjklmnpqrstvwxz2456789), so English words and versions never match
_K8S_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
DEPLOYMENT_POD = re.compile(rf"(?<![\w.-])([a-z0-9](?:[a-z0-9-]{{0,200}}[a-z0-9])?-{_K8S_SAFE}"
                            rf"{{6,10}}-{_K8S_SAFE}{{5}})(?![A-Za-z0-9.-])")
# hostnames in free text: an FQDN under a private suffix, and "host X" / "node X" / "Node: X"
INTERNAL_FQDN = re.compile(
    r"(?i)(?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.){1,8}"
    r"(?:internal|local|lan|corp|intranet|intra|localdomain))(?![\w-])(?!\.[a-z0-9])")
INTERNAL_SUFFIXES = (".internal", ".local", ".lan", ".corp", ".intra", ".localdomain")
HOST_WORD = re.compile(r"(?i)(?<![\w-])(?:host|node|hostname|machine)(?:\s{1,3}|:\s{1,16})"
                       r"[\"']?([a-z][a-z0-9-]{1,62})(?![\w])")
# after "node"/"host" but not a hostname: Ray's hex node ids, UUIDs, interpreters
NOT_A_HOSTNAME_WORD = re.compile(r"(?i)[0-9a-f]{16,}\Z|[0-9a-f]{8}-[0-9a-f]{4}-|python\d")
USER_ENV = re.compile(r"\b(?:USER|LOGNAME|SUDO_USER|USERNAME)=([A-Za-z0-9._-]{1,64})")
PATH_SEGMENT = re.compile(r"(?<=[/\\])([A-Za-z0-9._-]{1,64})(?=[/\\\s'\":,;)\]]|$)")
TOKEN = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]{0,252}")
RANK_TAG = re.compile(r"(?i)(?:rank|tp|dp|pp|ep|cp|gpu|cuda|dev|device|step|epoch|iter)"
                      r"[-_]?\d{1,6}\Z")
DISTINCTIVE_MIN = 4
MAX_LEARNED = 100_000  # hostnames remembered for global replacement (bounded memory)


def _looks_like_ip(value: str) -> bool:
    return IPV4.fullmatch(value) is not None or (":" in value and IPV6.fullmatch(value) is not None)


class Redactor:
    """Consistent pseudonyms for one run; counts what it replaced, per kind.

    Feed it lines with `line` (or `learn` them first, for a two-pass redaction where a
    hostname first seen late in the log is still replaced in earlier lines).
    """

    def __init__(self) -> None:
        self._maps: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
        self._next: Counter[str] = Counter()  # last number handed out, per kind
        self.counts: Counter[str] = Counter()  # occurrences replaced, per kind
        self._used: dict[str, set[str]] = {kind: set() for kind in KINDS}  # pseudonyms emitted
        self._hosts: dict[str, str] = {}  # distinctive hostnames -> pseudonym, replaced anywhere
        self._learned_kind: dict[str, str] = {}  # a learned pseudonym -> its kind (pod, namespace)
        self._users: set[str] = set()  # user names met in a home path or USER=, sought in paths
        self._counting = True  # False during `learn`: pseudonyms allocated, nothing counted
        self._in_pem = False  # inside a PEM private key: every line until its END is secret

    # ----------------------------------------------------------------- bookkeeping
    def pseudonym(self, kind: str, value: str, *, count: bool = True) -> str:
        """The stable stand-in for `value` of `kind`, allocating the next number if new."""
        table = self._maps[kind]
        key = value.lower() if kind in ("hostname", "email", "ip") else value
        name = table.get(key)
        if name is None and kind == "hostname" and "." in key:
            name = table.get(key.split(".", 1)[0])  # gpu-3.cluster.local is gpu-3
            if name is not None:
                table[key] = name
        if name is None:
            self._next[kind] += 1
            name = KINDS[kind].format(n=self._next[kind])
            table[key] = name
            short = key.split(".", 1)[0]
            if kind == "hostname" and short != key and _distinctive(short):
                table.setdefault(short, name)
        if count:
            self.counts[kind] += 1
            self._used[kind].add(name)
        return name

    def distinct(self) -> dict[str, int]:
        """How many different values of each kind were replaced (only kinds seen).

        Hostnames learned in a first pass but never written out do not count.
        """
        return {kind: len(used) for kind, used in self._used.items() if used}

    def hosts(self) -> dict[str, str]:
        """The host names learned so far (real name -> pseudonym), one per host: the longest
        spelling (gpu-3.cluster.local, not its alias gpu-3); pods and namespaces left out."""
        longest: dict[str, str] = {}  # pseudonym -> real name
        for name, pseudo in self._hosts.items():
            if self._learned_kind.get(pseudo, "hostname") != "hostname":
                continue
            if len(name) > len(longest.get(pseudo, "")):
                longest[pseudo] = name
        return {name: pseudo for pseudo, name in longest.items()}

    def summary(self) -> list[dict[str, Any]]:
        """[{kind, label, distinct, occurrences}] for the kinds that occurred, in KINDS order."""
        out = []
        for kind in KINDS:
            n = len(self._used[kind])
            if n:
                out.append({"kind": kind, "label": LABELS[kind], "distinct": n,
                            "occurrences": self.counts[kind]})
        return out

    def summary_line(self) -> str:
        """One line for stderr / the Markdown footer: `hostnames: 3 (12×), IP addresses: 2 (4×)`."""
        parts = [f"{s['label']}: {s['distinct']} ({s['occurrences']}×)" for s in self.summary()]
        return ", ".join(parts) if parts else "nothing to redact"

    # ----------------------------------------------------------------- hostnames
    def _host(self, name: str, *, count: bool = True) -> str | None:
        """Pseudonym for a hostname in a host position, or None to keep it as it is."""
        low = name.lower().rstrip(".")
        known = self._maps["hostname"].get(low)
        if known is not None:  # the common case, e.g. the same NCCL prefix on every line
            return self.pseudonym("hostname", low, count=count)
        if (not low or low in KEEP_HOSTS or PSEUDONYM.match(low) or _looks_like_ip(low)
                or low.startswith("<") or RANK_TAG.match(low)):
            return None
        if any(low == d or low.endswith("." + d) for d in PUBLIC_DOMAINS):
            return None
        pseudo = self.pseudonym("hostname", low, count=count)
        if _distinctive(low) and len(self._hosts) < MAX_LEARNED:
            self._hosts.setdefault(low, pseudo)
            short = low.split(".", 1)[0]
            if "." in low and _distinctive(short):
                self._hosts.setdefault(short, pseudo)  # gpu-3.cluster.local -> also "gpu-3"
        return pseudo

    def learn(self, text: str) -> None:
        """Register the hostnames found in host positions of `text`, replacing nothing.

        Used for a first pass, so a hostname is known before the line that mentions it
        in free text.
        """
        for name in self._host_positions(text):
            self._host(name, count=False)
        self._counting = False
        try:
            self._kubernetes(text)
            self._note_users(text)
        finally:
            self._counting = True

    def _host_positions(self, text: str) -> Iterator[str]:
        if " [" in text:
            for m in NCCL_PREFIX.finditer(text):
                yield m.group(1)
        head = PDSH.match(text)
        if head and self._pdsh_ok(head.group(1), text[head.end():]):
            yield head.group(1)
        head = JOURNALD.match(text)
        if head:
            yield head.group(1)
        if "ip=" in text:
            for m in IP_FIELD.finditer(text):
                yield m.group(1)
        low = text.lower()
        if "host" in low or "addr" in low or "endpoint" in low or "node" in low:
            for m in HOST_ASSIGN.finditer(text):
                yield m.group(2)
        if "]:" in text:
            for m in BRACKET_HOST.finditer(text):
                if _distinctive(m.group(1)):
                    yield m.group(1)
        if "://" in text:
            for m in URL.finditer(text):
                if not m.group(4).startswith("["):
                    yield m.group(4)
        if any(x in low for x in INTERNAL_SUFFIXES):
            for m in INTERNAL_FQDN.finditer(text):
                if _fqdn_ok(m.group(1)):
                    yield m.group(1)
        if "host" in low or "node" in low or "machine" in low:
            for m in HOST_WORD.finditer(text):
                if _host_word_ok(m.group(1)):
                    yield m.group(1)

    @staticmethod
    def _pdsh_ok(name: str, rest: str) -> bool:
        """A pdsh/srun label such as `gpu-node-5:`; not `step1: loss`, not `Error:`, not a
        file, model or package name (`model-00001-of-00002.safetensors:`, `llama-3.1-8b:`,
        `flash-attn-2.7.0:`)."""
        if not any(c.isdigit() for c in name) or RANK_TAG.match(name) or NOT_A_HOST.search(name):
            return False
        if "-" in name or "." in name:
            return True
        rest = rest[1:] if rest.startswith(" ") else rest
        return not rest or LOOKS_LIKE_RECORD.match(rest) is not None

    # ----------------------------------------------------------------- the rules
    def line(self, text: str) -> str:
        """Redact one line (no newline inside); cheap substring checks skip unneeded rules."""
        if not text:
            return text
        s = text
        if self._in_pem or "PRIVATE KEY" in s:
            pem = self._pem(s)
            if pem is not None:
                return pem
        for needle, pattern, group in SECRET_CATALOGUE:
            if needle in s:
                s = pattern.sub(functools.partial(self._catalogued, group=group), s)
        low = s.lower()
        if "://" in s:
            s = URL.sub(self._url, s)
        if "authorization" in low:
            s = AUTH_HEADER.sub(self._auth, s)
        if "bearer" in low:
            s = BEARER.sub(lambda m: m.group(1) + self._secret("bearer-token", m.group(2)), s)
        if "hf_" in s:
            s = HF_TOKEN.sub(lambda m: self.pseudonym("hf-token", m.group()), s)
        if "sk-" in s:
            s = OPENAI_KEY.sub(lambda m: self.pseudonym("openai-key", m.group()), s)
        if any(w in low for w in ("key", "token", "pass", "secret")):
            s = SECRET_FLAG.sub(self._secret_value, s)
            s = SECRET_ASSIGN.sub(self._secret_value, s)
        if "@" in s:
            s = EMAIL.sub(self._email, s)
        s = self._kubernetes(s)
        s = self._positional_hosts(s)
        if "." in s:
            s = IPV4.sub(self._ipv4, s)
        if ":" in s and ("::" in s or s.count(":") >= 7):
            s = IPV6.sub(self._ipv6, s)
        if "Users" in s or "/home/" in s:
            self._note_users(s)
            s = HOME.sub(lambda m: m.group(1) + self.pseudonym("user", m.group(2)), s)
        if "USER" in s or "LOGNAME=" in s:
            s = USER_ENV.sub(lambda m: self._sub_user(m), s)
        if self._users and ("/" in s or "\\" in s):
            s = PATH_SEGMENT.sub(lambda m: self._sub_user(m), s)
        if self._hosts:
            s = self._learned_hosts(s)
        return s

    def text(self, text: str) -> str:
        """Redact a multi-line string line by line (keeps the line breaks)."""
        if "\n" not in text:
            return self.line(text)
        return "\n".join(self.line(part) for part in text.split("\n"))

    def lines(self, lines: Iterable[str]) -> Iterator[str]:
        """Redact a stream of lines (each may end in a newline, which is kept)."""
        for raw in lines:
            body = raw.rstrip("\r\n")
            yield self.line(body) + raw[len(body):]

    def value(self, key: str, value: Any) -> Any:
        """Redact one parsed argument value (server_args, vLLM args), knowing its name."""
        if isinstance(value, str):
            k = key.lower().replace("-", "_")
            if SECRET_KEY.fullmatch(k) and value.lower() not in NOT_SECRET:
                if HF_TOKEN.fullmatch(value):
                    return self.pseudonym("hf-token", value)
                if OPENAI_KEY.fullmatch(value):
                    return self.pseudonym("openai-key", value)
                return self.pseudonym("api-key", value)
            if k == "process" and HOST_PID.match(value):  # NCCL's host:pid as a process name
                name, _, pid = value.rpartition(":")
                known = self._maps["hostname"].get(name.lower())
                if known is not None:
                    return f"{self.pseudonym('hostname', name)}:{pid}"
            if k in ("host", "hostname", "master_addr", "dist_init_addr", "node_ip_address",
                     "rdzv_endpoint") and value:
                name, sep, port = value.partition(":")
                if not _looks_like_ip(name):
                    pseudo = self._host(name)
                    if pseudo is not None:
                        return pseudo + sep + port
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self.value(key, v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.value(str(k), v) for k, v in value.items()}
        return value

    # ----------------------------------------------------------------- callbacks
    def _secret(self, kind: str, value: str) -> str:
        if value.startswith("<") or value.lower() in NOT_SECRET:
            return value
        if HF_TOKEN.fullmatch(value):
            return self.pseudonym("hf-token", value)
        if OPENAI_KEY.fullmatch(value):
            return self.pseudonym("openai-key", value)
        return self.pseudonym(kind, value)

    def _catalogued(self, m: re.Match[str], group: int) -> str:
        """Replace group `group` of a catalogue match by its pseudonym, keeping the rest."""
        value = m.group(group)
        if value.lower() in NOT_SECRET or value.startswith("<"):
            return m.group()
        start, end = m.start(group) - m.start(), m.end(group) - m.start()
        whole = m.group()
        return whole[:start] + self.pseudonym("cloud-key", value) + whole[end:]

    def _pem(self, s: str) -> str | None:
        """Lines of a PEM private key: the BEGIN/END markers stay, the body goes, also when
        the whole key is on one line (a JSON value with escaped newlines)."""
        if not self._in_pem:
            begin = PEM_BEGIN.search(s)
            if begin is None:
                return None
            end = PEM_END.search(s, begin.end())
            body_end = end.start() if end is not None else len(s)
            body = s[begin.end():body_end]
            self._in_pem = end is None
            if not body.strip():
                return s
            return s[:begin.end()] + self.pseudonym("private-key", body) + s[body_end:]
        end = PEM_END.search(s)
        if end is not None:
            self._in_pem = False
            body = s[:end.start()]
            return (self.pseudonym("private-key", body) if body.strip() else body) + s[end.start():]
        return self.pseudonym("private-key", s) if s.strip() else s

    def _auth(self, m: re.Match[str]) -> str:
        return m.group(1) + (m.group(2) or "") + self._secret("auth-header", m.group(3))

    def _secret_value(self, m: re.Match[str]) -> str:
        head = m.group(1)
        name = head.lower()
        kind = "password" if "pass" in name else "api-key"
        for i, quote in ((2, "'"), (3, '"'), (4, "")):
            value = m.group(i)
            if value is not None:
                return f"{head}{quote}{self._secret(kind, value)}{quote}"
        return m.group()

    def _url(self, m: re.Match[str]) -> str:
        scheme, user, password, host = m.group(1), m.group(2), m.group(3), m.group(4)
        out = scheme
        if user is not None:
            out += user if PSEUDONYM.match(user) else self.pseudonym("user", user)
            if password is not None:
                out += ":" + (self._secret("password", password) if password else "")
            out += "@"
        if host.startswith("[") or _looks_like_ip(host):
            return out + host  # the IP rules below handle it
        pseudo = self._host(host)
        return out + (pseudo if pseudo is not None else host)

    def _email(self, m: re.Match[str]) -> str:
        local, domain = m.group(1), m.group(2)
        tld = domain.rsplit(".", 1)[-1]
        if (not tld.isalpha() or len(tld) < 2 or tld.lower() in UNIT_SUFFIXES
                or local.lower() == "git"):
            return m.group()
        return self.pseudonym("email", m.group())

    def _positional_hosts(self, s: str) -> str:
        if " [" in s:
            s = NCCL_PREFIX.sub(lambda m: self._sub_group(m, 1), s)
        m = PDSH.match(s)
        if m and self._pdsh_ok(m.group(1), s[m.end():]):
            s = self._replace_at(s, m, 1)
        m = JOURNALD.match(s)
        if m:
            s = self._replace_at(s, m, 1)
        if "ip=" in s:
            s = IP_FIELD.sub(lambda m: self._sub_group(m, 1), s)
        low = s.lower()
        if "host" in low or "addr" in low or "endpoint" in low or "node" in low:
            s = HOST_ASSIGN.sub(lambda m: self._sub_group(m, 2), s)
        if "]:" in s:
            s = BRACKET_HOST.sub(
                lambda m: self._sub_group(m, 1) if _distinctive(m.group(1)) else m.group(), s)
        if "onnect" in s:
            s = CONNECT_TUPLE.sub(
                lambda m: self._sub_group(m, 2) if _distinctive(m.group(2)) else m.group(), s)
        if any(x in low for x in INTERNAL_SUFFIXES):
            s = INTERNAL_FQDN.sub(
                lambda m: self._sub_group(m, 1) if _fqdn_ok(m.group(1)) else m.group(), s)
        if "host" in low or "node" in low or "machine" in low:
            s = HOST_WORD.sub(
                lambda m: self._sub_group(m, 1) if _host_word_ok(m.group(1)) else m.group(), s)
        return s

    # ----------------------------------------------------------------- kubernetes, users
    def _name(self, kind: str, value: str) -> str | None:
        """Pseudonym for a pod or namespace name in a position that says what it is."""
        low = value.lower()
        if PSEUDONYM.match(low) or NOT_A_HOSTNAME_WORD.match(low) or (
                kind == "k8s-namespace" and low in KEEP_NAMESPACES):
            return None
        pseudo = self.pseudonym(kind, low, count=self._counting)
        if _distinctive(low) and len(self._hosts) < MAX_LEARNED:
            self._hosts.setdefault(low, pseudo)
            self._learned_kind[pseudo] = kind
        return pseudo

    def _sub_names(self, m: re.Match[str], groups: tuple[tuple[int, str], ...]) -> str:
        """The match with each (group, kind) replaced by its pseudonym, right to left."""
        out = m.group()
        for group, kind in sorted(groups, key=lambda g: -m.start(g[0])):
            pseudo = self._name(kind, m.group(group))
            if pseudo is not None:
                a, b = m.start(group) - m.start(), m.end(group) - m.start()
                out = out[:a] + pseudo + out[b:]
        return out

    def _kubernetes(self, s: str) -> str:
        """Pod and namespace names where kubectl, the kubelet or a manifest prints them."""
        pod = ((1, "k8s-pod"),)
        if "pod" in s:
            s = KUBECTL_PREFIX.sub(lambda m: self._sub_names(m, pod), s)
            s = POD_WORD.sub(
                lambda m: self._sub_names(m, pod) if _pod_like(m.group(1)) else m.group(), s)
        if "_" in s and "(" in s:
            s = KUBELET_REF.sub(lambda m: self._sub_names(m, ((1, "k8s-pod"),
                                                              (2, "k8s-namespace"))), s)
        if s.startswith("Name:"):
            m = DESCRIBE_NAME.match(s)
            if m and _pod_like(m.group(1)):
                s = self._sub_names(m, pod)
        low = s.lower()
        if "namespace" in low:
            s = NAMESPACE_FIELD.sub(lambda m: self._sub_names(m, ((1, "k8s-namespace"),)), s)
        if "-n" in s and KUBE_COMMAND.search(s):
            s = NAMESPACE_FLAG.sub(lambda m: self._sub_names(m, ((1, "k8s-namespace"),)), s)
        if ".svc" in s:
            s = SERVICE_NAMESPACE.sub(lambda m: self._sub_names(m, ((1, "k8s-namespace"),)), s)
        if s.count("-") >= 2:
            s = DEPLOYMENT_POD.sub(lambda m: self._sub_names(m, pod), s)
        return s

    def _note_users(self, s: str) -> None:
        """Remember user names from home paths and USER=, to find them in other paths."""
        if len(self._users) >= MAX_LEARNED:
            return
        found = []
        if "Users" in s or "/home/" in s:
            found += [m.group(2) for m in HOME.finditer(s)]
        if "USER" in s or "LOGNAME=" in s:
            found += [m.group(1) for m in USER_ENV.finditer(s)]
        for name in found:
            if len(name) >= 3 and name.lower() not in GENERIC_USERS and not PSEUDONYM.match(name):
                self._users.add(name)

    def _sub_user(self, m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in self._users and not (m.re is USER_ENV and name.lower() not in
                                            GENERIC_USERS and not PSEUDONYM.match(name)):
            return m.group()
        a, b = m.start(1) - m.start(), m.end(1) - m.start()
        return m.group()[:a] + self.pseudonym("user", name) + m.group()[b:]

    def _sub_group(self, m: re.Match[str], group: int) -> str:
        """The match with its hostname `group` replaced (kept when not a real hostname)."""
        pseudo = self._host(m.group(group))
        if pseudo is None:
            return m.group()
        a, b = m.start(group) - m.start(), m.end(group) - m.start()
        return m.group()[:a] + pseudo + m.group()[b:]

    def _replace_at(self, s: str, m: re.Match[str], group: int) -> str:
        """`s` with the hostname at `group` of anchored match `m` replaced."""
        pseudo = self._host(m.group(group))
        return s if pseudo is None else s[:m.start(group)] + pseudo + s[m.end(group):]

    def _ipv4(self, m: re.Match[str]) -> str:
        ip = m.group()
        if ip in KEEP_IPS or ip.startswith("0."):
            return ip
        if VERSION_CONTEXT.search(m.string, max(0, m.start() - 12), m.start()):
            return ip
        if NAMED_VERSION.search(m.string, max(0, m.start() - 14), m.start()):
            return ip  # "TensorRT 10.0.1.6": a product's 4-part version
        return self.pseudonym("ip", ip)

    def _ipv6(self, m: re.Match[str]) -> str:
        ip = m.group()
        if ip.lower() in KEEP_IPS:
            return ip
        groups = [g for g in ip.split(":") if g]
        if "::" in ip and len(groups) < 3 and not (
                len(groups[0]) == 4 and any(c.isdigit() for c in groups[0])):
            return ip  # "c10::add" is C++, "fe80::1" is an address
        return self.pseudonym("ip", ip)

    def _learned_hosts(self, s: str) -> str:
        """Replace hostnames learned from host positions wherever they appear as a word."""
        if len(self._hosts) <= 32:
            low = s.lower()
            if not any(h in low for h in self._hosts):
                return s

        def swap(m: re.Match[str]) -> str:
            word = m.group()
            stripped = word.rstrip(".-")
            pseudo = self._hosts.get(stripped.lower())
            if pseudo is not None:
                kind = self._learned_kind.get(pseudo, "hostname")
                self.counts[kind] += 1
                self._used[kind].add(pseudo)
                return pseudo + word[len(stripped):]
            return word

        return TOKEN.sub(swap, s)


def _distinctive(name: str) -> bool:
    """A hostname unusual enough to replace wherever it appears (`gpu-node-5`, not `vllm`)."""
    low = name.lower()
    return (len(low) >= DISTINCTIVE_MIN and any(c in low for c in "-.0123456789")
            and not low.replace(".", "").isdigit() and RANK_TAG.match(low) is None
            and PSEUDONYM.match(low) is None and low not in KEEP_HOSTS)


def _pod_like(name: str) -> bool:
    """A pod name after "pod"/"Name:": generated names carry a dash and a digit (`x-0`,
    `vllm-7d9f8b6c5-x2x4k`); "the pod is ready" names nothing."""
    return ("-" in name and any(c.isdigit() for c in name) and NOT_A_HOST.search(name) is None
            and PSEUDONYM.match(name) is None)


def _fqdn_ok(name: str) -> bool:
    """`node17.corp.internal`, `ip-10-0-0-1.ec2.internal`; not `threading.local`."""
    first = name.split(".", 1)[0]
    return (name.count(".") >= 2 or any(c.isdigit() or c == "-" for c in first)) and (
        name.lower() not in KEEP_HOSTS)


def _host_word_ok(name: str) -> bool:
    """The name after "host"/"node" is a hostname when it has a digit and is not a rank
    tag, a version or a file (`gpu-worker-17`, `dgx-a100-07`; not `rank0`, `v2`)."""
    return (len(name) >= 4 and any(c.isdigit() for c in name) and RANK_TAG.match(name) is None
            and NOT_A_HOST.search(name) is None and PSEUDONYM.match(name) is None
            and NOT_A_HOSTNAME_WORD.match(name) is None)


def redact_stream(lines: Iterable[str], redactor: Redactor | None = None,
                  learn_from: Callable[[], Iterable[str]] | None = None) -> Iterator[str]:
    """Redact `lines` lazily; `learn_from` (a re-readable source) enables the first pass."""
    r = redactor or Redactor()
    if learn_from is not None:
        for raw in learn_from():
            r.learn(raw.rstrip("\r\n"))
    yield from r.lines(lines)
