# SPDX-License-Identifier: Apache-2.0
"""A child process for the Python tests that drive the real binaries (tests/deploy,
tests/integration/identity): its output goes to a file in a test directory; wait_for() finds a
line in it. Import with tests/support on sys.path."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

TIMEOUT = 20.0


class Child:
    """A child process whose output goes to a file; wait_for finds a line in it."""

    def __init__(self, args, directory, env=None):
        self.log = open(Path(directory) / f"{Path(args[0]).name}-{len(os.listdir(directory))}.log",
                        "w+")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                        env=env)

    def output(self):
        self.log.flush()
        return Path(self.log.name).read_text()

    def wait_for(self, pattern, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            match = re.search(pattern, self.output())
            if match:
                return match
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no /{pattern}/ in the output of {self.process.args}:\n"
                             f"{self.output()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
