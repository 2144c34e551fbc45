"""Identities outside the host positions (#12): Kubernetes pod and namespace names, hostnames
in free text (internal FQDNs, "host X", "node X"), user names seen in a home path and met
again elsewhere, and a parsed admin key that must not reach the HTML environment table.
Each kind has look-alike lines that must come out unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.report.redact import Redactor

ROOT = Path(__file__).resolve().parent.parent
POD = "vllm-llama-7d9f8b6c5-x2x4k"
NAMESPACE = "ml-prod-team"

# (a line as kubectl, the kubelet, ssh or a launcher prints it, the identity inside it)
POSITIVES: list[tuple[str, str]] = [
    (f"[pod/{POD}/vllm] INFO 01-01 10:00:00 api_server.py:1 vLLM API server version 0.9.1", POD),
    (f"Name:             {POD}", POD),
    (f"Namespace:        {NAMESPACE}", NAMESPACE),
    (f"$ kubectl logs -n {NAMESPACE} {POD} --previous", NAMESPACE),
    (f"kubectl --namespace={NAMESPACE} describe pod/{POD}", POD),
    (f"Back-off restarting failed container vllm in pod {POD}_{NAMESPACE}(0a1b2c3d-1234)", POD),
    (f"Error from server (NotFound): pods \"{POD}\" not found", POD),
    ("Using Ray cluster head at ray-head.ml-serving.svc.cluster.local:6379", "ml-serving"),
    ("INFO: connecting to trainer-3.corp.example.internal:29500 for rendezvous", "trainer-3"),
    ("INFO 01-01 running on node ip-10-1-2-3.ec2.internal", "ip-10-1-2-3"),
    ("ssh: connect to host dgx-a100-07 port 22: Connection refused", "dgx-a100-07"),
    ("NCCL timeout observed on node gpu-worker-17 after 600 s", "gpu-worker-17"),
    ("metadata: {namespace: ml-prod-team, app: vllm}", NAMESPACE),
]
NEGATIVES = [  # look-alikes: ordinary words after "pod", "node", "host"; public names
    "Name:             vllm",
    "the pod is ready after 3 retries",
    "node 0 of 2 joined the rendezvous",
    "Capturing batches on node rank0",
    "Namespace:        default",
    "kubectl get pods -n kube-system",
    "Loading model-00001-of-00002.safetensors: 100%",
    "pip install flash-attn-2.7.0 on host",
    "model server v2 started",
    "Downloading from cdn-lfs.huggingface.co",
]


@pytest.mark.parametrize("line,identity", POSITIVES, ids=[p[1] + f"-{i}" for i, p in
                                                           enumerate(POSITIVES)])
def test_identity_is_replaced(line: str, identity: str) -> None:
    out = Redactor().line(line)
    assert identity not in out, out


@pytest.mark.parametrize("line", NEGATIVES)
def test_look_alike_is_kept(line: str) -> None:
    assert Redactor().line(line) == line


def test_learned_pod_and_namespace_replaced_everywhere() -> None:
    r = Redactor()
    lines = [f"Namespace:        {NAMESPACE}", f"[pod/{POD}/vllm] ready",
             f"events in {NAMESPACE} mention {POD} twice: {POD}"]
    for line in lines:
        r.learn(line)
    out = [r.line(line) for line in lines]
    assert not any(POD in x or NAMESPACE in x for x in out), out
    assert out[1].startswith("[pod/pod-1/vllm]"), out[1]  # the container name stays
    assert out[2].count("pod-1") == 2  # the same pseudonym, consistently


def test_user_from_home_path_replaced_in_other_paths() -> None:
    r = Redactor()
    lines = ["cd /home/alice7/work", "loading /mnt/shared/alice7/ckpt/step100",
             "USER=alice7 LOGNAME=alice7"]
    for line in lines:
        r.learn(line)
    out = [r.line(line) for line in lines]
    assert not any("alice7" in x for x in out), out
    assert r.line("/mnt/shared/models/llama") == "/mnt/shared/models/llama"


def test_generic_home_names_not_replaced_elsewhere() -> None:
    r = Redactor()
    r.learn("cd /home/ubuntu/work")
    assert r.line("/opt/ubuntu/share") == "/opt/ubuntu/share"


def test_admin_api_key_not_in_html_environment(tmp_path: Path) -> None:
    src = ROOT / "corpus/b05-sglang/sglang-rocm-rdna4-qwen35-27b-awq-tp2-256k-nvcc-notfound-triton-jit-healthy.log"
    text = src.read_text()
    assert "admin_api_key=None" in text
    log = tmp_path / "a.log"
    log.write_text(text.replace("admin_api_key=None", "admin_api_key='s3cr3tAdminKey42'"))
    out = tmp_path / "r.html"
    got = subprocess.run([sys.executable, "-m", "analyzer", "report", str(log), "-o", str(out)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert got.returncode == 0, got.stderr
    html = out.read_text()
    assert "admin_api_key" in html  # the argument is shown ...
    assert "s3cr3tAdminKey42" not in html  # ... its value is not
