"""The secret catalogue (#12): each kind with real-shaped positive lines and look-alike
negatives, and a leak test: a hostile log with every kind goes through `redact`, `report`
(HTML and Markdown) and `explain --format markdown`, and no secret value comes out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.report.redact import Redactor

ROOT = Path(__file__).resolve().parent.parent

# (kind, a line as a log or a command would print it, the secret inside it); the values are
# the documented example shapes (AWS's own EXAMPLE keys), not live credentials
POSITIVES: list[tuple[str, str, str]] = [
    ("aws key id", "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("github classic", "git clone https://ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/x",
     "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
    ("github fine-grained", "GH_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    ("slack bot", "SLACK_TOKEN xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack webhook", "POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("jwt", "token=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("jwt in json", '{"id_token": "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V4In0.c2lnbmF0dXJlX2hlcmVfeHh4"}',
     "eyJpc3MiOiJodHRwczovL2V4In0"),
    ("google", "GOOGLE_API_KEY=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"),
    ("azure storage", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
     "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA=="),
    ("nvidia", "NGC key nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_ab", "nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_ab"),
    ("stripe", "charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("s3 presigned", "GET https://bucket.s3.amazonaws.com/ckpt.pt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20260101&X-Amz-Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
     "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"),
    ("s3 session token", "X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJH",
     "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJH"),
    ("wandb login", "$ wandb login 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("wandb env", "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("docker login", "docker login -u ci -p s3cr3tPassw0rd nvcr.io", "s3cr3tPassw0rd"),
    ("netrc", "machine api.wandb.ai login user password 0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ("secret env", "SECRET=hunter2hunter2", "hunter2hunter2"),
    ("private_key arg", "private_key='abcdEFGH12345678zz'", "abcdEFGH12345678zz"),
    ("cookie", "Cookie: session=8f14e45fceea167a5a36dedd4bea2543; csrftoken=abc", "8f14e45fceea167a5a36dedd4bea2543"),
]
PEM = ["-----BEGIN RSA PRIVATE KEY-----",
       "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwAuMhAzlqLmSz",
       "o9C0rFzq8a2lJxPDjqk7ES9dLBvxkA9nfSlT1x2CXkuBtYs3bPUHtKQsZJ6hS1Kw",
       "-----END RSA PRIVATE KEY-----"]
NEGATIVES = [  # look-alikes that must come out unchanged
    "Loading model-00001-of-00002.safetensors: 100%",
    "[2026-01-01 10:00:00 TP0] Capture cuda graph bs [1, 2, 4, 8]",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275",
    "skipping secret scan: none",
    "AKIA is a prefix; so is ASIA",
    "sk_test_ short",
    # over-redaction the issue found: not host labels, not IP addresses
    "model-00001-of-00002.safetensors: 100%|##########| 5.00G/5.00G",
    "llama-3.1-8b: loading",
    "flash-attn-2.7.0: building wheel",
    "TensorRT 10.0.1.6 found",
]


@pytest.mark.parametrize("kind,line,secret", POSITIVES, ids=[p[0] for p in POSITIVES])
def test_catalogue_positive(kind: str, line: str, secret: str) -> None:
    out = Redactor().line(line)
    assert secret not in out, out
    assert out != line


def test_pem_body_is_replaced_markers_kept() -> None:
    r = Redactor()
    out = [r.line(x) for x in PEM]
    assert out[0] == PEM[0] and out[-1] == PEM[-1]
    assert all(PEM[i] not in out[i] for i in (1, 2))
    one_line = r.line('"key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
                      '-----END PRIVATE KEY-----\\n"')
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in one_line
    assert r.line("INFO after the key") == "INFO after the key"  # the key ended


@pytest.mark.parametrize("line", NEGATIVES)
def test_catalogue_negative(line: str) -> None:
    assert Redactor().line(line) == line


def test_same_secret_same_pseudonym() -> None:
    r = Redactor()
    a = r.line("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE")
    b = r.line("using key AKIAIOSFODNN7EXAMPLE again")
    assert a.split("=", 1)[1] in b


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = ["[2026-01-01 10:00:00] INFO server_args=ServerArgs(model_path='m')"]
    lines += [f"[2026-01-01 10:00:0{i % 10}] INFO {line}" for i, (_, line, _) in
              enumerate(POSITIVES)]
    lines += PEM
    lines += ["[2026-01-01 10:00:10 TP0] Scheduler hit an exception: Traceback (most recent call last):",
              '  File "/srv/sglang/srt/managers/scheduler.py", line 1, in run',
              "    raise RuntimeError(\"upload failed: X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJH\")",
              "RuntimeError: upload failed: X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJH",
              "[2026-01-01 10:00:11] Received sigquit from a child process. It usually means the child failed."]
    path = tmp_path_factory.mktemp("leak") / "hostile.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("argv", [["redact"], ["report", "-f", "html"], ["report", "-f", "markdown"],
                                  ["explain", "-f", "markdown"]],
                         ids=["redact", "report-html", "report-md", "explain-md"])
def test_no_secret_leaks_into_any_output(hostile: Path, tmp_path: Path, argv: list[str]) -> None:
    out = tmp_path / "out"
    got = subprocess.run([sys.executable, "-m", "analyzer", *argv, str(hostile), "-o", str(out)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert got.returncode == 0, got.stderr
    text = out.read_text()
    leaked = [kind for kind, _, secret in POSITIVES if secret in text]
    leaked += ["pem"] if PEM[1] in text else []
    assert not leaked, leaked


def test_explain_markdown_can_opt_out(hostile: Path) -> None:
    got = subprocess.run([sys.executable, "-m", "analyzer", "explain", str(hostile), "-f",
                          "markdown", "--no-redact"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, check=False)
    assert "IQoJb3JpZ2luX2VjEJr" in got.stdout  # the user asked for the raw text
