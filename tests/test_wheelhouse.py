"""experiments/setup/wheelhouse.py: requirement parsing, the folder and completeness checks, the CLI.

Fast and offline: wheels are tiny zip files with a METADATA made in tmp_path; pip is only run
for the offline install of such fake wheels (no index).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from experiments.setup import wheelhouse as wh

REPO = Path(__file__).resolve().parents[1]
KINDS_MD = Path("/work/.library/device/KINDS.md")
ENV = wh.target_environment("3.12")


def make_wheel(folder: Path, name: str, version: str, requires: list[str] = (),
               tag: str = "py3-none-any", files: dict[str, str] | None = None) -> Path:
    """A minimal, installable wheel: METADATA (with Requires-Dist), WHEEL, RECORD, one module."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    path = folder / f"{dist}-{version}-{tag}.whl"
    info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    members = {
        f"{dist}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": meta,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         f"Tag: {tag}\n",
        **(files or {}),
    }
    members[f"{info}/RECORD"] = "".join(f"{m},,\n" for m in members) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in members.items():
            zf.writestr(member, text)
    return path


def reqs(text: str) -> wh.RequirementsFile:
    return wh.parse_requirements(text)


# --------------------------------------------------------------------------- parsing


def test_parse_pins_comments_and_waivers():
    r = reqs("""
# a comment
Foo_Bar==1.0   # trailing comment
baz==2.0.post1
# not-shipped (foo-bar): Qux, quux -- not needed for sft
# not-shipped: zot -- never imported
""")
    assert [(p.name, p.version) for p in r.pins] == [("foo-bar", "1.0"), ("baz", "2.0.post1")]
    assert r.pins[0].spec == "foo-bar==1.0"
    assert r.waived == {("foo-bar", "qux"): "not needed for sft",
                        ("foo-bar", "quux"): "not needed for sft",
                        ("", "zot"): "never imported"}
    assert r.waiver("foo-bar", "qux") == "not needed for sft"
    assert r.waiver("baz", "qux") is None  # scoped to foo-bar
    assert r.waiver("baz", "zot") == "never imported"


@pytest.mark.parametrize("line", ["foo>=1.0", "foo", "foo==1.*", "foo[x]==1.0",
                                  "foo==1.0; python_version<'3.12'", "-r other.txt",
                                  "foo==1.0,!=1.1", "not a requirement!"])
def test_parse_rejects_anything_but_exact_pins(line):
    with pytest.raises(wh.WheelhouseError, match="line 2"):
        reqs(f"ok==1\n{line}\n")


def test_parse_rejects_two_versions_of_one_package():
    with pytest.raises(wh.WheelhouseError, match="pinned twice.*keep one"):
        reqs("Foo==1\nbar==1\nfoo==2\n")


def test_the_real_requirements_file():
    r = wh.load_requirements()
    pins = {p.name: p.version for p in r.pins}
    assert pins["ms-swift"] == "4.6.0"
    for name in ("papermill", "ipykernel", "jupyter-client", "pyzmq", "tornado", "nbclient",
                 "nbformat", "jsonschema", "dashscope", "jsonlines"):
        assert name in pins, name
    # Nothing the host already has in the same version: that would only cost transfer size.
    host = wh.gpu_host_packages()
    same = [n for n, v in pins.items() if host.get(n) == v]
    assert same == []
    # Every waiver names a wheel of the set (or none) and a package that is not shipped.
    for (by, name) in r.waived:
        assert by == "" or by in pins
        assert name not in pins


# --------------------------------------------------------------------------- host list


def test_host_list_from_kinds_md_text():
    text = ("| pip list, as a session saw it | 2026-11, ... filtered by the names it asked for: "
            "accelerate 1.15.0, torch 2.11.0, transformers 5.17.0 |\n\n"
            "## Python packages already there\n\nblah. Packages: absl-py, accelerate, PyYAML, "
            "torch, transformers, typing-extensions.\n")
    host = wh.parse_host_packages(text)
    assert host == {"absl-py": None, "accelerate": "1.15.0", "pyyaml": None,
                    "torch": "2.11.0", "transformers": "5.17.0", "typing-extensions": None}


def test_host_list_from_pip_freeze_and_pip_list():
    assert wh.parse_host_packages("Foo_Bar==1.2\nbaz==3\n") == {"foo-bar": "1.2", "baz": "3"}
    listing = "Package    Version\n---------- -------\nFoo_Bar    1.2\nqux\n"
    assert wh.parse_host_packages(listing) == {"foo-bar": "1.2", "qux": None}


def test_builtin_host_snapshot():
    host = wh.gpu_host_packages()
    assert len(host) == 197
    assert host["torch"] == "2.11.0" and host["transformers"] == "5.17.0"
    assert host["accelerate"] == "1.15.0"
    assert all(v for v in host.values())  # a freeze: every version known


@pytest.mark.skipif(not KINDS_MD.is_file(), reason=f"{KINDS_MD} is not present")
def test_builtin_host_snapshot_matches_kinds_md():
    kinds = wh.parse_host_packages(KINDS_MD.read_text())
    host = wh.gpu_host_packages()
    assert set(kinds) == set(host)
    assert {n: v for n, v in kinds.items() if v and host[n] != v} == {}


def test_target_environment():
    assert ENV["python_version"] == "3.12" and ENV["python_full_version"] == "3.12.3"
    assert ENV["sys_platform"] == "linux" and ENV["platform_machine"] == "x86_64"
    assert wh.target_environment("3.11")["python_full_version"] == "3.11.0"


# --------------------------------------------------------------------------- folder check


def folder_problems(folder: Path, text: str) -> list[str]:
    wheels, others = wh.list_folder(folder)
    return wh.check_folder(wheels, others, reqs(text).pins)


def test_folder_ok(tmp_path):
    make_wheel(tmp_path, "foo", "1.0")
    make_wheel(tmp_path, "bar-baz", "2.0", tag="cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64")
    make_wheel(tmp_path, "abi", "3.0", tag="cp311-abi3-manylinux_2_28_x86_64")
    make_wheel(tmp_path, "old", "4.0", tag="py2.py3-none-any")
    make_wheel(tmp_path, "mp", "5.0", tag="py312-none-any")
    assert folder_problems(tmp_path, "foo==1.0\nbar_baz==2.0\nabi==3.0\nold==4.0\nmp==5.0\n") == []


def test_folder_problems(tmp_path):
    make_wheel(tmp_path, "foo", "1.1")  # wrong version
    make_wheel(tmp_path / "x", "dup", "1.0", tag="cp312-cp312-manylinux_2_28_x86_64")
    for p in (tmp_path / "x").iterdir():
        p.rename(tmp_path / p.name)
    (tmp_path / "x").rmdir()
    make_wheel(tmp_path, "dup", "1.0")  # a second build of the same pin
    make_wheel(tmp_path, "stray", "1.0")  # not in the requirements
    make_wheel(tmp_path, "win", "1.0", tag="cp312-cp312-win_amd64")
    make_wheel(tmp_path, "py311", "1.0", tag="cp311-cp311-manylinux_2_17_x86_64")
    make_wheel(tmp_path, "mac", "1.0", tag="cp312-cp312-macosx_11_0_arm64")
    make_wheel(tmp_path, "new-glibc", "1.0", tag="cp312-cp312-manylinux_2_40_x86_64")
    (tmp_path / "notes.txt").write_text("x")
    problems = folder_problems(tmp_path, "foo==1.0\ndup==1.0\nwin==1.0\npy311==1.0\nmac==1.0\n"
                                         "new-glibc==1.0\nmissing==1.0\n")
    text = "\n".join(problems)
    assert "not a wheel: notes.txt" in text
    assert "foo-1.1-py3-none-any.whl: version 1.1, pinned 1.0" in text
    assert "2 wheels for dup" in text
    assert "not in requirements: stray-1.0-py3-none-any.whl" in text
    assert "missing wheel: missing==1.0" in text
    for bad in ("win-1.0", "py311-1.0", "mac-1.0", "new_glibc-1.0"):
        assert any(p.startswith(bad) and "no tag" in p for p in problems), bad
    assert len(problems) == 9


# --------------------------------------------------------------------------- completeness


def completeness(folder: Path, host: dict, waived: dict | None = None) -> wh.CheckReport:
    wheels, _ = wh.list_folder(folder)
    return wh.check_completeness(wheels, host, waived or {}, ENV)


def test_complete_set(tmp_path):
    make_wheel(tmp_path, "app", "1.0", [
        "lib>=2,<3",                                 # in the set
        "torch>=2.5",                                # on the host, version known and fitting
        "rich",                                      # on the host
        "colorama>=0.4; sys_platform == 'win32'",    # marker: not for Linux
        "tomli; python_version < '3.11'",            # marker: not for 3.12
        "pytest; extra == 'dev'",                    # an extra nobody asks for
        "cffi; implementation_name == 'pypy'",       # not CPython
    ])
    make_wheel(tmp_path, "lib", "2.5", ["typing-extensions>=4.6; python_version < '3.13'"])
    rep = completeness(tmp_path, {"torch": "2.11.0", "rich": None, "typing-extensions": "4.16.0"})
    assert rep.ok, rep.problems
    assert rep.waived == [] and rep.notes == []


def test_gaps_and_conflicts(tmp_path):
    make_wheel(tmp_path, "app", "1.0", ["lib<2", "torch>=3", "numpy>=1", "ghost>=1",
                                        "pexpect>4.6; sys_platform != 'win32'"])
    make_wheel(tmp_path, "lib", "2.5")
    rep = completeness(tmp_path, {"torch": "2.11.0", "numpy": None})
    text = "\n".join(rep.problems)
    assert "app 1.0 needs lib<2, the set has 2.5" in text
    assert "app 1.0 needs torch>=3, the host has 2.11.0" in text
    assert "app 1.0 needs ghost>=1: neither in the wheel set nor on the host" in text
    assert "needs pexpect>4.6" in text  # the marker applies on Linux
    assert len(rep.problems) == 4
    assert rep.notes == ["numpy>=1 (for app 1.0): on the host, version not recorded"]


def test_extras_asked_for_apply(tmp_path):
    make_wheel(tmp_path, "app", "1.0", ["lib[http]==2.0"])
    make_wheel(tmp_path, "lib", "2.0", ["aiohttp; extra == 'http'", "missing-a; extra == 'http'",
                                        "missing-b; extra == 's3'"])
    rep = completeness(tmp_path, {"aiohttp": "3.14"})
    assert rep.problems == ["lib 2.0 [http] needs missing-a; extra == \"http\": "
                            "neither in the wheel set nor on the host"]


def test_waivers(tmp_path):
    make_wheel(tmp_path, "app", "1.0", ["openai", "fastapi"])
    make_wheel(tmp_path, "other", "1.0", ["openai"])
    waived = {("app", "openai"): "web UI only", ("", "fastapi"): "never imported"}
    rep = completeness(tmp_path, {}, waived)
    assert rep.waived == ["fastapi (for app 1.0): never imported",
                          "openai (for app 1.0): web UI only"]
    # the scoped waiver does not cover another wheel declaring the same requirement
    assert rep.problems == ["other 1.0 needs openai: neither in the wheel set nor on the host"]


def test_unreadable_wheels(tmp_path):
    (tmp_path / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    with pytest.raises(wh.WheelhouseError, match="not a zip"):
        wh.list_folder(tmp_path)
    (tmp_path / "broken-1.0-py3-none-any.whl").unlink()
    with zipfile.ZipFile(tmp_path / "nometa-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("nometa/__init__.py", "")
    with pytest.raises(wh.WheelhouseError, match="METADATA"):
        wh.list_folder(tmp_path)


# --------------------------------------------------------------------------- command line


def write_reqs(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "req.txt"
    path.write_text(text)
    return path


def test_check_cli(tmp_path, capsys):
    house = tmp_path / "house"
    make_wheel(house, "app", "1.0", ["lib", "rich", "openai"])
    make_wheel(house, "lib", "2.0")
    req = write_reqs(tmp_path, "app==1.0\nlib==2.0\n# not-shipped (app): openai -- web UI only\n")
    host = tmp_path / "freeze.txt"
    host.write_text("rich==15.0.0\n")
    args = ["--dest", str(house), "--check", "--requirements", str(req), "--host-packages", str(host)]
    assert wh.main(args) == 0
    out = capsys.readouterr().out
    assert "check: OK: 2 wheels" in out and "waived   openai (for app 1.0): web UI only" in out
    assert "total: 2 wheels" in out

    make_wheel(house, "stray", "1.0")
    assert wh.main(args) == 1
    assert "PROBLEM  not in requirements: stray-1.0-py3-none-any.whl" in capsys.readouterr().out


def test_check_cli_warns_over_48_mib(tmp_path, capsys, monkeypatch):
    house = tmp_path / "house"
    make_wheel(house, "app", "1.0")
    req = write_reqs(tmp_path, "app==1.0\n")
    monkeypatch.setattr(wh, "total_size", lambda folder: 50 * 2**20)
    assert wh.main(["--dest", str(house), "--check", "--requirements", str(req)]) == 0
    assert "warning: the wheel set is 50.0 MiB, over 48 MiB" in capsys.readouterr().out


def test_errors_are_one_line_exit_2(tmp_path, capsys):
    req = write_reqs(tmp_path, "app==1.0\napp==2.0\n")
    assert wh.main(["--dest", str(tmp_path), "--check", "--requirements", str(req)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wheelhouse: error: ") and err.count("\n") == 1
    req = write_reqs(tmp_path, "app==1.0\n")
    assert wh.main(["--dest", str(tmp_path / "nope"), "--check", "--requirements", str(req)]) == 2
    assert wh.main(["install", "--from", str(tmp_path / "nope"), "--requirements", str(req)]) == 2


def test_pip_download_command():
    cmd = wh.pip_download_cmd(["a==1"], Path("w"), "3.12", wh.DEFAULT_PLATFORMS)
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    for flag in ("--no-deps", "--only-binary=:all:", "--python-version", "--implementation"):
        assert flag in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12"
    assert cmd[cmd.index("--implementation") + 1] == "cp"
    plats = [cmd[i + 1] for i, c in enumerate(cmd) if c == "--platform"]
    # the device README's list is included, and glibc levels up to the host's 2.39
    for tag in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_34_x86_64",
                "manylinux_2_39_x86_64"):
        assert tag in plats
    assert not any(p.startswith("manylinux_2_40") for p in plats)
    assert cmd[-1] == "a==1"


def test_download_names_every_missing_wheel(tmp_path, monkeypatch, capsys):
    req = write_reqs(tmp_path, "good==1.0\nbad==2.0\nworse==3.0\n")

    def fake_pip(cmd):
        specs = [c for c in cmd if "==" in c]
        ok = all(s.startswith("good") for s in specs)
        return subprocess.CompletedProcess(cmd, 0 if ok else 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(wh, "_pip_quiet", fake_pip)
    assert wh.main(["--dest", str(tmp_path / "house"), "--requirements", str(req)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("wheelhouse: error: no binary wheel for CPython 3.12")
    assert err[0].endswith("for: bad==2.0 worse==3.0")


def test_download_keeps_the_build_pip_picked(tmp_path, monkeypatch, capsys):
    house = tmp_path / "house"
    old = make_wheel(house, "app", "1.0", tag="cp312-cp312-manylinux_2_17_x86_64")
    make_wheel(house, "stray", "1.0")
    req = write_reqs(tmp_path, "app==1.0\n")

    def fake_pip(cmd):
        new = make_wheel(house, "app", "1.0", tag="cp312-cp312-manylinux_2_34_x86_64")
        return subprocess.CompletedProcess(cmd, 0, f"Saved {new}\n", "")

    monkeypatch.setattr(wh, "_pip_quiet", fake_pip)
    assert wh.main(["--dest", str(house), "--requirements", str(req)]) == 1  # stray stays
    out = capsys.readouterr().out
    assert not old.exists() and f"removing {old.name}" in out
    assert "warning: stray-1.0-py3-none-any.whl is not in the requirements" in out
    assert wh.main(["--dest", str(house), "--requirements", str(req), "--clean"]) == 0
    assert sorted(p.name for p in house.iterdir()) == ["app-1.0-cp312-cp312-manylinux_2_34_x86_64.whl"]


def test_install_command():
    pins = reqs("a==1\nb==2\n").pins
    cmd = wh.install_cmd(Path("house"), pins, None)
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert "--no-index" in cmd and "--no-deps" in cmd and "--target" not in cmd
    assert cmd[cmd.index("--find-links") + 1] == "house"
    assert cmd[-2:] == ["a==1", "b==2"]
    cmd = wh.install_cmd(Path("house"), pins, Path("/tmp/site"))
    assert cmd[cmd.index("--target") + 1] == "/tmp/site"


def test_offline_install_into_a_target(tmp_path, capsys):
    house = tmp_path / "house"
    make_wheel(house, "swb-fake-one", "1.0", ["swb-fake-two"])
    make_wheel(house, "swb-fake-two", "2.0")
    req = write_reqs(tmp_path, "swb-fake-one==1.0\nswb-fake-two==2.0\n")
    site = tmp_path / "site"
    assert wh.main(["install", "--from", str(house), "--target", str(site),
                    "--requirements", str(req)]) == 0
    assert (site / "swb_fake_one" / "__init__.py").read_text() == "VERSION = '1.0'\n"
    assert (site / "swb_fake_two-2.0.dist-info" / "METADATA").is_file()
    assert "installed 2 packages into" in capsys.readouterr().out


def test_slim_wheel_keeps_the_named_libraries_and_still_installs(tmp_path):
    """A wheel with three native libraries, two dropped: the zip and its RECORD agree, and pip installs it."""
    import base64
    import hashlib

    def rec(name, data):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{name},sha256={digest},{len(data)}"

    files = {"fakebnb/__init__.py": b"X = 1\n", "fakebnb/libfake_cuda118.so": b"a" * 5000,
             "fakebnb/libfake_cuda130.so": b"b" * 300, "fakebnb/libfake_cpu.so": b"c" * 200,
             "fakebnb-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: fakebnb\nVersion: 1.0\n",
             "fakebnb-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                                           b"Tag: py3-none-any\n"}
    record = "\n".join(rec(n, d) for n, d in files.items()) + "\nfakebnb-1.0.dist-info/RECORD,,\n"
    whl = tmp_path / "fakebnb-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        zf.writestr("fakebnb-1.0.dist-info/RECORD", record)
    reqs = wh.parse_requirements("fakebnb==1.0\n# slim (fakebnb): keep libfake_cuda130.so, libfake_cpu.so -- test\n")
    assert reqs.slim == {"fakebnb": (("libfake_cuda130.so", "libfake_cpu.so"), "test")}
    wh.apply_slim(tmp_path, reqs)
    with zipfile.ZipFile(whl) as zf:
        names = set(zf.namelist())
        rec_names = {ln.split(",", 1)[0] for ln in zf.read("fakebnb-1.0.dist-info/RECORD").decode().splitlines() if ln}
    assert "fakebnb/libfake_cuda118.so" not in names and "fakebnb/libfake_cuda130.so" in names
    assert rec_names == names  # every file listed, nothing listed that is gone
    assert wh.slim_wheel(whl, ("libfake_cuda130.so", "libfake_cpu.so"))[0] == whl.stat().st_size  # idempotent
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                        str(target), str(whl)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (target / "fakebnb" / "libfake_cuda130.so").is_file()
    assert not (target / "fakebnb" / "libfake_cuda118.so").exists()


def test_requirements_slim_bitsandbytes_to_the_hosts_cuda():
    reqs = wh.load_requirements()
    keep, _ = reqs.slim["bitsandbytes"]
    assert "libbitsandbytes_cuda130.so" in keep  # the host's torch is 2.11.0+cu130 (GPU-HOST.md)
    assert any(p.name == "bitsandbytes" for p in reqs.pins)


def test_host_freeze_is_a_data_file_read_at_use():
    """The host's freeze list lives in host-freeze.txt (package data), one pin a line, not as a string in the code."""
    path = wh.GPU_HOST_FREEZE
    assert path.name == "host-freeze.txt" and path.parent == Path(wh.__file__).parent
    pins = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    assert len(pins) == len(wh.gpu_host_packages()) == 197
    assert "absl-py==2.5.0" not in Path(wh.__file__).read_text(encoding="utf-8")
