"""The verified descriptor can be executed (the exec gate runs exactly the bytes that were hashed), and a
file changed after it was opened is refused rather than executed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from atip_trust import Artifact
from atip_trust.errors import ArtifactAccessError

RUNNER = r"""
import os, sys
from atip_trust import Artifact
art = Artifact.open(sys.argv[1])
print(art.sha256, flush=True)
fd = art.exec_fd()
os.execve(fd, [sys.argv[1], "world"], {"PATH": "/usr/bin:/bin"})
"""


def _script(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "tool"
    p.write_text(body)
    p.chmod(0o755)
    return p


def test_shebang_script_runs_through_its_verified_descriptor(tmp_path: Path) -> None:
    tool = _script(tmp_path, '#!/bin/sh\necho "hello $1"\n')
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(tool)], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    digest, said = proc.stdout.splitlines()
    assert digest.startswith("sha256:") and said == "hello world"


def test_descriptor_is_close_on_exec_until_handed_over(tmp_path: Path) -> None:
    import os

    with Artifact.open(_script(tmp_path, "#!/bin/sh\n:\n")) as art:
        assert not os.get_inheritable(art.fd)
        fd = art.exec_fd()
        assert fd == art.fd and os.get_inheritable(fd)


def test_file_rewritten_after_verification_is_not_executed(tmp_path: Path) -> None:
    tool = _script(tmp_path, "#!/bin/sh\necho safe\n")
    with Artifact.open(tool) as art:
        art.sha256  # verified bytes
        with open(tool, "a") as f:  # the owner edits it in place through another descriptor
            f.write("rm -rf \"$HOME\"\n")
        with pytest.raises(ArtifactAccessError, match="changed since it was verified: expected"):
            art.exec_fd()


def test_closed_artifact_has_no_descriptor_to_execute(tmp_path: Path) -> None:
    art = Artifact.open(_script(tmp_path, "#!/bin/sh\n:\n"))
    art.close()
    with pytest.raises(ArtifactAccessError):
        art.exec_fd()
