"""`--rules` files are validated like a schema (#12): a wrong type, an unknown key, a pattern
that cannot compile or would backtrack exponentially, a file nested too deeply to parse or a
directory named *.toml is one line naming the file and the entry, exit 2, never exit 70."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "corpus" / "seed" / "seed-sglang-tp8-oom-sigquit-logging-error.log"
GOOD = 'id = "user.x"\nkind = "failure"\ncategory = "other"\nsystem = "any"\n'

BAD = {
    "id_not_a_string": ('[[signature]]\nid = 5\nkind = "failure"\ncategory = "other"\n'
                        'pattern = "x"\n', "id must be a string"),
    "pattern_not_a_string": (f"[[signature]]\n{GOOD}pattern = 12\n", "pattern must be a string"),
    "priority_not_an_integer": (f'[[signature]]\n{GOOD}pattern = "x"\npriority = "high"\n',
                                "priority must be an integer"),
    "explains_not_a_list": (f'[[signature]]\n{GOOD}pattern = "x"\nexplains = "os.killed"\n',
                            "explains must be a list of strings"),
    "unknown_key": (f'[[signature]]\n{GOOD}pattern = "x"\npaterns = "y"\n', "unknown key"),
    "bad_regex": (f'[[signature]]\n{GOOD}pattern = "(unclosed"\n', "bad pattern"),
    "nested_quantifier": (f'[[signature]]\n{GOOD}pattern = "(a+)+$"\n', "nests quantifiers"),
    "nested_star": ('[[marker]]\nid = "user.m"\nphase = "startup"\nedge = "in"\n'
                    'pattern = "(\\\\w*)*x"\n', "nests quantifiers"),
    "too_long": (f'[[signature]]\n{GOOD}pattern = "{"x" * 5000}"\n', "longer than"),
    "not_an_array": ('signature = "nope"\n', "array of tables"),
    "entry_not_a_table": ("signature = [1, 2]\n", "must be a table"),
    "deeply_nested": ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    "not_toml": ("[[signature\n", "x.toml"),
}


def _explain(rules: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analyzer", "explain", str(LOG), "--rules",
                           str(rules)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          check=False)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_rules_file_is_one_line_and_exit_2(tmp_path: Path, name: str) -> None:
    text, why = BAD[name]
    (tmp_path / "x.toml").write_text(text)
    got = _explain(tmp_path)
    assert got.returncode == 2, got.stderr
    assert why in got.stderr and got.stderr.count("\n") == 1, got.stderr
    assert "Traceback" not in got.stderr


def test_a_directory_named_toml_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "ok.toml").write_text(f'[[signature]]\n{GOOD}pattern = "never matches zq"\n')
    got = _explain(tmp_path)
    assert got.returncode == 0, got.stderr


def test_a_good_user_signature_still_loads(tmp_path: Path) -> None:
    (tmp_path / "ok.toml").write_text(
        '[[signature]]\nid = "user.sigquit"\nkind = "failure"\ncategory = "other"\n'
        'system = "any"\npattern = "Received sigquit from a child process"\npriority = 1\n'
        'examples = ["Received sigquit from a child process. It usually means the child failed."]\n')
    got = _explain(tmp_path)
    assert got.returncode == 0, got.stderr
