"""Redaction: every kind of secret or identity is replaced, nothing diagnostic is touched.

One test per kind, then what must survive (timestamps, versions, rank tags, device and
PCI ids, tensor sizes, loopback addresses), consistency of pseudonyms, linear time on
hostile lines, and `loglens redact` streaming real corpus logs.
"""

from __future__ import annotations

import gzip
import hashlib
import time
from pathlib import Path

import pytest

from analyzer.cli.report import redact as redact_command
from analyzer.errors import InputError, UsageError
from analyzer.report.redact import KINDS, Redactor

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
RAY_LOG = CORPUS / "distributed" / "mixed-verl-ray-workerdict-watchdog-actordied.log"
JOURNALD_LOG = CORPUS / "vllm" / "vllm-journald-inprogress-weight-load-env-warnings.log"
PDSH_LOG = CORPUS / "distributed" / "nccl-p4d-ring-loopback-internal-error-pdsh.log"


def red(*lines: str) -> list[str]:
    r = Redactor()
    return [r.line(line) for line in lines]


def one(line: str) -> str:
    return red(line)[0]


# ------------------------------------------------------------------------------ kinds
def test_hugging_face_token() -> None:
    out = one("export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")
    assert out == "export HF_TOKEN=<hf-token-1>"
    assert one("login with hf_abcdefghijklmnopqrstuvwxyz12 now") == "login with <hf-token-1> now"


def test_openai_style_key() -> None:
    assert one("key sk-proj-abcdefghijklmnopqrstuvwxyz0123") == "key <openai-key-1>"
    assert one("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx") == "OPENAI_API_KEY=<openai-key-1>"


def test_bearer_token() -> None:
    out = one("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig-_x' localhost:8000")
    assert out == "curl -H 'Authorization: Bearer <bearer-token-1>' localhost:8000"


def test_authorization_header() -> None:
    assert one("headers={'Authorization': 'Basic dXNlcjpwYXNzd29yZA=='}") == \
        "headers={'Authorization': 'Basic <auth-header-1>'}"
    assert one("Authorization: token ghp_0123456789abcdef") == \
        "Authorization: token <auth-header-1>"


def test_api_key_in_command_line_and_argument_dumps() -> None:
    assert one("python -m sglang.launch_server --api-key s3cret-value --port 30000") == \
        "python -m sglang.launch_server --api-key <api-key-1> --port 30000"
    assert one("vllm serve m --api-key=abc123xyz") == "vllm serve m --api-key=<api-key-1>"
    assert one("args: Namespace(api_key='abc', port=8000)") == \
        "args: Namespace(api_key='<api-key-1>', port=8000)"
    assert one("non-default args: {'api_key': \"abc\"}") == \
        "non-default args: {'api_key': \"<api-key-1>\"}"
    # a key that is itself a known token format is labelled as such
    assert one("ServerArgs(api_key='sk-abcdefghijklmnopqrstuvwxyz')") == \
        "ServerArgs(api_key='<openai-key-1>')"


def test_passwords_in_urls_and_assignments() -> None:
    assert one("redis://admin:hunter2@cache-1.corp.example.net:6379/0") == \
        "redis://user-1:<password-1>@host-1:6379/0"
    assert one("db password='hunter2' ok") == "db password='<password-1>' ok"


def test_email() -> None:
    assert one("contact alice.smith@corp-mail.com or bob@example.org.") == \
        "contact email-1 or email-2."


def test_ipv4() -> None:
    assert one("peer 10.0.0.2<48598> error 12") == "peer ip-1<48598> error 12"
    assert one("connect to (10.0.0.1, 29400)") == "connect to (ip-1, 29400)"
    assert one("tcp://172.16.3.4:8001") == "tcp://ip-1:8001"


def test_ipv6() -> None:
    assert one("listening on [fe80::a00:27ff:fe4e:66a1]:80") == "listening on [ip-1]:80"
    assert one("peer 2001:db8:85a3:0:0:8a2e:370:7334 up") == "peer ip-1 up"
    assert one("via 2001:db8::1") == "via ip-1"


def test_hostname_from_nccl_prefix() -> None:
    assert one("node-0:24141:24296 [2] NCCL INFO proxy.cc:684 -> 2") == \
        "host-1:24141:24296 [2] NCCL INFO proxy.cc:684 -> 2"
    assert one("[1,0]<stdout>:test-nccl-worker-0:21:21 [0] NCCL INFO Bootstrap") == \
        "[1,0]<stdout>:host-1:21:21 [0] NCCL INFO Bootstrap"


def test_ip_field() -> None:
    assert one("(WorkerDict pid=835, ip=10.0.143.83) [rank38]: boom") == \
        "(WorkerDict pid=835, ip=ip-1) [rank38]: boom"
    assert one("(Worker pid=1, ip=gpu-box-3) hi") == "(Worker pid=1, ip=host-1) hi"


def test_hostname_in_url() -> None:
    assert one("GET http://inference-7.internal:8000/v1/models") == \
        "GET http://host-1:8000/v1/models"
    # public hosts tell where a download went and leak nothing
    assert one("https://huggingface.co/meta-llama/Llama-3.1-8B") == \
        "https://huggingface.co/meta-llama/Llama-3.1-8B"


def test_pdsh_prefix() -> None:
    assert red("gpu-node-5: gpu-node-5:3048:4991 [2] NCCL WARN Error", "gpu-node-5:") == \
        ["host-1: host-1:3048:4991 [2] NCCL WARN Error", "host-1:"]


def test_journald_host() -> None:
    out = one("Aug 19 18:30:22 inference01 vllm[8727]: (EngineCore pid=8727) INFO ok")
    assert out == "Aug 19 18:30:22 host-1 vllm[8727]: (EngineCore pid=8727) INFO ok"


def test_host_arguments() -> None:
    assert one("--host my-head-node --master_addr=worker-3 MASTER_ADDR=10.1.2.3") == \
        "--host host-1 --master_addr=host-2 MASTER_ADDR=ip-1"
    assert one("connect to [gpu-node-1.cluster.local]:29500") == "connect to [host-1]:29500"


def test_user_in_home_paths() -> None:
    assert one('File "/home/alice/miniconda/lib/python3.8/site.py", line 3') == \
        'File "/home/user-1/miniconda/lib/python3.8/site.py", line 3'
    assert one("/Users/bob/x and C:\\Users\\carol\\AppData") == \
        "/Users/user-1/x and C:\\Users\\user-2\\AppData"


def test_every_kind_has_a_test_line() -> None:
    """The list of kinds and the tests above stay in step."""
    r = Redactor()
    for line in ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "sk-abcdefghijklmnopqrstuvwx",
                 "Bearer abcdefghijk", "Authorization: Basic dXNlcjpw", "--api-key xyz123",
                 "https://u:pw@h-1.corp/", "a@b-c.com", "10.9.8.7", "n-1:1:2 [0] x",
                 "/home/alice/", "AKIAIOSFODNN7EXAMPLE", "[pod/vllm-0/c] x", "Namespace:  ml-team", "-----BEGIN PRIVATE KEY-----",
                 "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"):
        r.line(line)
    assert {s["kind"] for s in r.summary()} == set(KINDS)


# ------------------------------------------------------------------------------ kept
KEEP = [
    "[2026-02-22 23:13:52 TP0] Init torch distributed begin.",
    "2026-05-01T19:08:06.391Z stdout F INFO 05-01 17:08:06 [utils.py:299] ready",
    "E1026 04:09:30.101000 2904014 site-packages/torch/distributed/run.py:882] failed",
    "[rank38]:[E809 14:59:30.411244289 ProcessGroupNCCL.cpp:629] [Rank 38] Watchdog",
    "NCCL version 2.21.5+cuda12.4; vLLM 0.8.5.post1; torch 2.5.1+cu124; sglang 0.4.1.post3",
    "cudnn 9.1.0.70 nvidia-cudnn-cu12==9.1.0.70 version: 1.2.3.4 v10.1.2.3",
    "[2026-02-22 23:19:14 TP3] cuda:0 GPU 3 has a total capacity of 79.15 GiB",
    "comm 0x5562191160f0 rank 3 nranks 16 cudaDev 3 busId 13000 - Init COMPLETE",
    "NVRM: Xid (PCI:0000:db:00): 31, pid=13641 device 0000:3d:00.0 faulted @ 0x7fd7_90743000",
    "torch.Size([4096, 11008]) shape (8, 128, 4096), 1.2.3 and 255.255.255",
    "--host 0.0.0.0 --port 30000 bind 127.0.0.1:8000 localhost:8000 [::1]:80 ::1<28028>",
    "MAC 00:1b:21:3a:4f:5e; c10::add(x); std::vector<int>; at::Tensor; c10d::ProcessGroup",
    "task_memcg=/user.slice/user-1000.slice/user@1000.service/app.slice",
    "Please set a HF_TOKEN to enable higher rate limits; api_key=None; host=None",
    "max_tokens=100 pad_token='<pad>' eos_token_id=2 tokenizer_mode='auto'",
    "step1: loss 0.5",
    "Error: something failed",
    "Traceback (most recent call last):",
    "Aug 19 18:30:22 kernel: [12.3] NVRM: GPU at PCI:0000:db:00",
    "/root/sglang/python/sglang/srt/managers/scheduler.py",
    "https://github.com/sgl-project/sglang/issues/1234 and https://docs.vllm.ai/en/latest/",
    "(VllmWorker rank=6 pid=5489) TP6 DP0 EP3 Worker_TP1 [TP0] tp_size=8",
    "Loading safetensors checkpoint shards:  50% Completed | 32/64 [02:37<02:37,  4.91s/it]",
]


@pytest.mark.parametrize("line", KEEP)
def test_diagnostic_text_is_kept(line: str) -> None:
    assert one(line) == line


def test_journald_unit_name_is_not_a_hostname_elsewhere() -> None:
    """Journald host `vllm` is replaced in its position only: `vllm` is also the software."""
    r = Redactor()
    first = r.line("Aug 19 18:30:11 vllm vllm[8707]: INFO [api_utils.py:345] vllm ready")
    assert first == "Aug 19 18:30:11 host-1 vllm[8707]: INFO [api_utils.py:345] vllm ready"
    assert r.line("/usr/lib/python3/dist-packages/vllm/engine.py") == \
        "/usr/lib/python3/dist-packages/vllm/engine.py"


# ------------------------------------------------------------------------------ consistency
def test_same_value_same_pseudonym_across_lines_and_positions() -> None:
    r = Redactor()
    out = [r.line(x) for x in (
        "node-0:24142:24263 [3] NCCL INFO comm rank 3",
        "node-1:555:556 [0] NCCL INFO comm rank 8",
        "rank 8 failed to reach node-0 at 10.0.0.2",
        "(node-0, 29400) via 10.0.0.2 and 10.0.0.3",
        "NODE-0.cluster.local:1:2 [0] x",
        "box-7.corp.example:1:2 [0] then box-7 and box-7.corp.example",
    )]
    assert out == [
        "host-1:24142:24263 [3] NCCL INFO comm rank 3",
        "host-2:555:556 [0] NCCL INFO comm rank 8",
        "rank 8 failed to reach host-1 at ip-1",
        "(host-1, 29400) via ip-1 and ip-2",
        "host-1:1:2 [0] x",  # the same host, fully qualified
        "host-3:1:2 [0] then host-3 and host-3",
    ]
    summary = {s["kind"]: s for s in r.summary()}
    assert summary["hostname"]["distinct"] == 3 and summary["ip"]["distinct"] == 2
    assert summary["hostname"]["occurrences"] == 8


def test_learning_pass_redacts_earlier_mentions() -> None:
    lines = ["waiting for gpu-box-12 to join", "gpu-box-12:77:78 [1] NCCL WARN timeout"]
    assert red(*lines)[0] == lines[0]  # one pass: not known yet
    r = Redactor()
    for line in lines:
        r.learn(line)
    assert [r.line(x) for x in lines] == ["waiting for host-1 to join",
                                          "host-1:77:78 [1] NCCL WARN timeout"]


def test_redacting_twice_changes_nothing() -> None:
    r = Redactor()
    once = r.line("alice@corp.com gpu-9:1:2 [0] 10.0.0.9 /home/alice/x hf_" + "a" * 30)
    assert Redactor().line(once) == once


def test_value_redaction_knows_argument_names() -> None:
    r = Redactor()
    assert r.value("api_key", "plain-secret") == "<api-key-1>"
    assert r.value("api_key", None) is None
    assert r.value("host", "head-node-2") == "host-1"
    assert r.value("host", "0.0.0.0") == "0.0.0.0"
    assert r.value("dist_init_addr", "head-node-2:5000") == "host-1:5000"
    assert r.value("model_path", "/home/alice/models/x") == "/home/user-1/models/x"
    r.learn("myhost:123:456 [0] NCCL INFO x")  # not distinctive enough to replace anywhere
    assert r.value("process", "myhost:123") == "host-2:123"
    assert r.value("process", "TP3") == "TP3"
    assert r.value("args", {"hf_token": "hf_" + "b" * 34, "tp_size": 8}) == \
        {"hf_token": "<hf-token-1>", "tp_size": 8}


# ------------------------------------------------------------------------------ linear time
HOSTILE = [
    "a" * 200_000,
    "1." * 100_000,
    "hf_" + "A" * 200_000,
    "sk-" + "a-" * 100_000,
    ":" * 200_000,
    "a:" * 100_000,
    "::" + "f:" * 100_000,
    "@" * 200_000,
    "a@" * 100_000,
    "a." * 100_000 + "@x",
    "http://" + "a" * 200_000,
    "http://" + "a:" * 100_000,
    "/home/" * 40_000,
    "Authorization: " * 15_000,
    "api_key=" * 25_000,
    "--api-key " * 20_000,
    "node-0:1:2 [0] " * 15_000,
    "[a-b]:12 " * 25_000,
    "gpu-node-5" + "-5" * 100_000 + ": x",
    "Aug 19 18:30:22 " + "h" * 200_000,
]


@pytest.mark.parametrize("line", HOSTILE, ids=range(len(HOSTILE)))
def test_linear_time_on_hostile_lines(line: str) -> None:
    """A generous bound (~100x the usual time): it catches a catastrophic regex, not a slow
    machine."""
    r = Redactor()
    r.learn("gpu-node-5:1:2 [0] x")  # make the learned-hostname scan run too
    start = time.perf_counter()
    out = r.line(line)
    elapsed = time.perf_counter() - start
    assert "\n" not in out
    assert elapsed < 5.0, f"{elapsed:.2f}s"


# ------------------------------------------------------------------------------ loglens redact
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("log", [RAY_LOG, JOURNALD_LOG, PDSH_LOG], ids=lambda p: p.stem[:30])
def test_redact_command_streams_a_corpus_log(log: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    before = _sha(log)
    out = tmp_path / "out.log"
    redact_command(str(log), out)
    assert _sha(log) == before  # the input is never modified
    original = log.read_bytes()
    redacted = out.read_bytes()
    assert redacted.count(b"\n") == original.count(b"\n")
    assert len(redacted.splitlines()) == len(original.splitlines())
    assert redacted != original
    summary = capsys.readouterr().err
    assert summary.startswith("loglens: redacted ") and summary.count("\n") == 1
    text = redacted.decode()
    for secret in ("10.0.143.83", "10.0.255.4", "gpu-node-5", "10.0.0.5"):
        assert secret not in text


def test_redact_command_journald_and_ray_specifics(tmp_path: Path) -> None:
    out = tmp_path / "j.log"
    redact_command(str(JOURNALD_LOG), out)
    lines = out.read_text().splitlines()
    assert all(line.startswith("Aug 19 ") and " host-1 vllm[" in line for line in lines if line)
    redact_command(str(RAY_LOG), out)
    assert "ip=ip-1)" in out.read_text()


def test_redact_command_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    log = tmp_path / "in.log"
    log.write_text("x 10.0.0.1\n")
    with pytest.raises(UsageError, match="refusing to overwrite the input"):
        redact_command(str(log), log)
    link = tmp_path / "link.log"
    link.symlink_to(log)
    with pytest.raises(UsageError, match="refusing to overwrite the input"):
        redact_command(str(log), link)
    assert log.read_text() == "x 10.0.0.1\n"
    with pytest.raises(InputError, match="no such file"):
        redact_command(str(tmp_path / "missing.log"), tmp_path / "o.log")
    with pytest.raises(UsageError, match="directory"):
        redact_command(str(tmp_path), tmp_path / "o.log")


def test_redact_command_keeps_bytes_and_handles_gzip(tmp_path: Path) -> None:
    raw = b"ok \xff\xfe 10.0.0.1\r\nno newline at the end hf_" + b"x" * 30
    src = tmp_path / "in.log.gz"
    src.write_bytes(gzip.compress(raw))
    out = tmp_path / "out.log"
    redact_command(str(src), out)
    assert out.read_bytes() == b"ok \xff\xfe ip-1\r\nno newline at the end <hf-token-1>"
    redact_command(str(src), tmp_path / "out.log.gz")
    assert gzip.decompress((tmp_path / "out.log.gz").read_bytes()) == out.read_bytes()
