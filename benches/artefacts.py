"""Where cargo puts what it builds: target/<host triple>/<profile>/, because .cargo/config.toml names the host's
target in every build (`host-tuple`). Read by the bench scripts for their default binary; honours
CARGO_TARGET_DIR."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def host():
    """The host's target triple, as rustc names it."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def built(name="tinycode", profile="release"):
    """The path of the executable `name` of a `profile` build."""
    target_dir = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target_dir, host(), profile, name)
