#!/usr/bin/env python3
"""Check the wiring of a tf-spawner cluster without TensorFlow.

Python 3 standard library only. Every task:

1. reads TF_CONFIG and finds its own address, cluster[type][index];
2. listens on that address's port (bound on 0.0.0.0) and answers every hello it gets;
3. connects to every other task of the cluster, retrying with backoff (peers start at
   different times and their DNS names may not resolve at first), and exchanges a small
   JSON hello: its name (type-index), a random number and a digest of the cluster;
4. adds up the random numbers of all cluster tasks: every task gets the same sum, and
   prints e.g. `worker-1: cluster of 3 tasks agrees on 1234567`, then exits 0.

A task keeps answering hellos until every peer has connected to it (or the timeout
passes), so nobody leaves before the others got its answer. If a peer cannot be
reached, or never connects back, by the timeout, the task says which and exits 1.

An evaluator is not in `cluster` (TensorFlow's convention): it only connects to the
cluster tasks and does not listen. The cluster tasks cannot know it exists, so they
keep answering for WIRING_LINGER seconds after they are done, to give it its chance.
(If the evaluator is listed in `cluster`, as Kubeflow does, it is an ordinary member.)

Environment:
  TF_CONFIG               set by tf-spawner (or by hand for a local run)
  WIRING_TIMEOUT          seconds to wait for the peers (default 60)
  WIRING_LINGER           seconds to keep answering once done (default 5)
  TF_SPAWNER_FAIL_TASK    e.g. worker-2 (comma-separated list allowed): that task exits 1
                          right away, to see how a failed task is handled
"""

import hashlib
import json
import os
import random
import socket
import sys
import threading
import time

MAX_MESSAGE = 64 * 1024


def fail(message):
    print(message, file=sys.stderr, flush=True)
    sys.exit(1)


def env_seconds(name, default):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        fail("%s=%r is not a number of seconds" % (name, raw))
    if value < 0:
        fail("%s=%r must not be negative" % (name, raw))
    return value


def split_address(address):
    """'host:port' (or '[v6]:port') -> (host, port)."""
    host, sep, port = str(address).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("%r is not host:port" % (address,))
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def read_line(conn, deadline):
    """One newline-terminated message from conn, parsed as JSON."""
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("no answer in time")
        conn.settimeout(remaining)
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("connection closed before a full message")
        data += chunk
        if len(data) > MAX_MESSAGE:
            raise ValueError("message too long")
    message = json.loads(data.split(b"\n", 1)[0].decode("utf-8"))
    if not isinstance(message, dict) or not isinstance(message.get("task"), str):
        raise ValueError("not a hello message: %r" % (message,))
    return message


class WiringCheck:
    def __init__(self, tf_config):
        cluster = tf_config.get("cluster")
        task = tf_config.get("task")
        if not isinstance(cluster, dict) or not isinstance(task, dict):
            raise ValueError("TF_CONFIG needs a 'cluster' object and a 'task' object")
        self.me = "%s-%s" % (task.get("type"), task.get("index"))

        # Every cluster task, in a stable order: name -> "host:port".
        self.members = {}
        for role in sorted(cluster):
            addresses = cluster[role]
            if not isinstance(addresses, list):
                raise ValueError("cluster[%r] is not a list" % (role,))
            for index, address in enumerate(addresses):
                split_address(address)  # fails early on a malformed entry
                self.members["%s-%d" % (role, index)] = address
        if not self.members:
            raise ValueError("the cluster in TF_CONFIG is empty")

        if self.me in self.members:
            self.own_port = split_address(self.members[self.me])[1]
        elif task.get("type") == "evaluator":
            self.own_port = None  # outside the training cluster: connect only
        else:
            raise ValueError("task %s is not in the cluster %s" % (self.me, sorted(self.members)))

        self.peers = [name for name in self.members if name != self.me]
        self.value = random.SystemRandom().randint(1, 1000000)
        # All tasks must have been given the same cluster; the digest catches a mismatch.
        canonical = json.dumps(cluster, sort_keys=True, separators=(",", ":"))
        self.digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

        self.lock = threading.Lock()
        self.values = {}          # peer name -> its random number (from its answer)
        self.errors = {}          # peer name -> last error while reaching it
        self.contacted_by = set() # names of tasks whose hello we answered
        self.mismatch = {}        # task name -> what was wrong with its hello

    def hello(self):
        message = {"task": self.me, "value": self.value, "cluster": self.digest}
        return (json.dumps(message) + "\n").encode("utf-8")

    # ---- server side --------------------------------------------------------------

    def listen(self):
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("0.0.0.0", self.own_port))
        except OSError as e:
            raise OSError("cannot listen on port %d: %s" % (self.own_port, e))
        server.listen(64)
        server.settimeout(0.2)
        return server

    def serve(self, server, stop):
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        try:
            with conn:
                message = read_line(conn, time.monotonic() + 10)
                conn.sendall(self.hello())
            with self.lock:
                name = message["task"]
                if message.get("cluster") != self.digest:
                    self.mismatch[name] = "it was given a different cluster in TF_CONFIG"
                self.contacted_by.add(name)
        except (OSError, ValueError) as e:
            # A broken hello is retried by its sender; nothing to record here.
            print("%s: bad hello from a peer: %s" % (self.me, e), file=sys.stderr, flush=True)

    # ---- client side --------------------------------------------------------------

    def reach(self, peer, deadline):
        host, port = split_address(self.members[peer])
        delay = 0.1
        last_said = time.monotonic()
        while True:
            try:
                with socket.create_connection((host, port), timeout=5) as conn:
                    conn.sendall(self.hello())
                    answer = read_line(conn, min(deadline, time.monotonic() + 10))
                if answer["task"] != peer:
                    raise ValueError("%s:%d answered as %s" % (host, port, answer["task"]))
                with self.lock:
                    if answer.get("cluster") != self.digest:
                        self.mismatch[peer] = "it was given a different cluster in TF_CONFIG"
                    self.values[peer] = int(answer["value"])
                    self.errors.pop(peer, None)
                return
            except (OSError, ValueError, KeyError, TypeError) as e:
                # socket.gaierror (name not resolvable yet) and refused connections
                # are both OSErrors: the peer may simply not be up yet.
                with self.lock:
                    self.errors[peer] = "%s: %s" % (type(e).__name__, e)
                if time.monotonic() - last_said >= 10:
                    # Say what is in the way while it lasts, not only at the deadline.
                    last_said = time.monotonic()
                    print("%s: still trying %s at %s:%d: %s" % (self.me, peer, host, port,
                                                                self.errors[peer]),
                          file=sys.stderr, flush=True)
            if time.monotonic() + delay >= deadline:
                return
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    # ---- the whole check ----------------------------------------------------------

    def run(self, timeout, linger):
        deadline = time.monotonic() + timeout
        stop = threading.Event()
        server = None
        if self.own_port is not None:
            server = self.listen()
            threading.Thread(target=self.serve, args=(server, stop), daemon=True).start()

        clients = [threading.Thread(target=self.reach, args=(p, deadline), daemon=True)
                   for p in self.peers]
        for t in clients:
            t.start()
        for t in clients:
            t.join(max(0.0, deadline - time.monotonic()) + 1)

        if server is not None:
            # Keep answering until every peer got our hello (or the deadline).
            while time.monotonic() < deadline:
                with self.lock:
                    if self.contacted_by.issuperset(self.peers):
                        break
                time.sleep(0.05)

        code = self.report(timeout, server is not None)
        if server is not None:
            # Print first, then linger: a run that stops the other tasks as soon as its
            # deciding task exits (tf-spawner --local does) still gets every line.
            if linger > 0:
                time.sleep(linger)  # a late evaluator may still want an answer
            stop.set()
            server.close()
        return code

    def report(self, timeout, listening):
        with self.lock:
            unreached = [p for p in self.peers if p not in self.values]
            silent = [p for p in self.peers if p not in self.contacted_by] if listening else []
            problems = []
            for p in unreached:
                problems.append("cannot reach %s at %s (%s)"
                                % (p, self.members[p], self.errors.get(p, "no attempt finished")))
            for p in silent:
                if p not in unreached:
                    problems.append("%s never connected to us (it cannot reach %s?)"
                                    % (p, self.members[self.me]))
            for p, why in sorted(self.mismatch.items()):
                problems.append("%s disagrees: %s" % (p, why))
            values = dict(self.values)

        if problems:
            for line in problems:
                print("%s: %s" % (self.me, line), file=sys.stderr)
            print("%s: wiring check FAILED after %.0fs (%d of %d peers answered)"
                  % (self.me, timeout, len(values), len(self.peers)), flush=True)
            return 1

        if self.me in self.members:
            values[self.me] = self.value
        total = sum(values[name] for name in self.members)
        count = len(self.members)
        print("%s: cluster of %d task%s agrees on %d"
              % (self.me, count, "" if count == 1 else "s", total), flush=True)
        return 0


def main():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        fail("TF_CONFIG is not set: run this under tf-spawner, or set it by hand")
    try:
        tf_config = json.loads(raw)
        check = WiringCheck(tf_config)
    except ValueError as e:
        fail("bad TF_CONFIG: %s" % (e,))

    failing = {t.strip() for t in os.environ.get("TF_SPAWNER_FAIL_TASK", "").split(",")}
    if check.me in failing:
        fail("%s: failing on purpose (TF_SPAWNER_FAIL_TASK=%s)"
             % (check.me, os.environ["TF_SPAWNER_FAIL_TASK"]))

    timeout = env_seconds("WIRING_TIMEOUT", 60.0)
    linger = env_seconds("WIRING_LINGER", 5.0)
    try:
        return check.run(timeout, linger)
    except OSError as e:
        fail("%s: %s" % (check.me, e))


if __name__ == "__main__":
    sys.exit(main())
