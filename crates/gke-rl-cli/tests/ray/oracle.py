"""Ray's own packaging code, called from the Rust tests and benchmarks as the reference.

usage: oracle.py uri DIR [EXCLUDE...]       print get_uri_for_directory(DIR), Ray 2.54 defaults
       oracle.py match < cases.json         print, per case, which paths PathSpec matches
       oracle.py package DIR OUT.zip        create_package(DIR) with the default excludes
       oracle.py zipnames ZIP               print the zip's entry names, sorted
       oracle.py time-package DIR RUNS      median seconds of hash + zip of DIR, in process
"""
import json
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from ray._private.runtime_env import packaging
from ray._private.thirdparty.pathspec import PathSpec

DEFAULT_EXCLUDES = [".git", ".venv", "venv", "__pycache__"]


def main(argv):
    command = argv[1]
    if command == "uri":
        print(packaging.get_uri_for_directory(argv[2], include_gitignore=True, excludes=DEFAULT_EXCLUDES + argv[3:]))
    elif command == "match":
        results = []
        for case in json.load(sys.stdin):
            try:
                spec = PathSpec.from_lines("gitwildmatch", case["patterns"])
                results.append([spec.match_file(path) for path in case["paths"]])
            except Exception as error:  # an invalid pattern: Ray's packager fails too
                results.append(f"error: {error}")
        json.dump(results, sys.stdout)
    elif command == "package":
        packaging.create_package(argv[2], Path(argv[3]), include_gitignore=True, excludes=DEFAULT_EXCLUDES)
        print(packaging.get_uri_for_directory(argv[2], include_gitignore=True, excludes=DEFAULT_EXCLUDES))
    elif command == "time-package":
        times = []
        for _ in range(int(argv[3])):
            with tempfile.TemporaryDirectory() as out:
                start = time.perf_counter()
                packaging.get_uri_for_directory(argv[2], include_gitignore=True, excludes=DEFAULT_EXCLUDES)
                packaging.create_package(argv[2], Path(out) / "p.zip", include_gitignore=True, excludes=DEFAULT_EXCLUDES)
                times.append(time.perf_counter() - start)
        print(statistics.median(times))
    elif command == "zipnames":
        archive = zipfile.ZipFile(argv[2])
        bad = archive.testzip()  # reads every entry and checks its CRC
        if bad is not None:
            sys.exit(f"bad CRC in {bad}")
        print("\n".join(sorted(archive.namelist())))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
