#!/usr/bin/env python3
"""A minimal cluster DNS for the one-node test cluster (test infrastructure, not a product).

No CoreDNS or kube-dns can be had from Debian's archive, so this answers the one thing
pods of a tf-spawner run need: `SERVICE.NAMESPACE.svc.CLUSTER_DOMAIN` (and through the
kubelet's search path `SERVICE.NAMESPACE.svc` and `SERVICE`).

It lists and then watches Services and Endpoints in every namespace through the API, and
answers over UDP:
  - a headless Service (clusterIP None): an A record per address in its Endpoints'
    `subsets[].addresses` (the endpoints controller puts not-ready pods there when the
    Service sets publishNotReadyAddresses, as CoreDNS expects too);
  - a Service with a cluster IP: that IP;
  - another name under the cluster domain: NXDOMAIN; a known name asked for another
    type (AAAA...): an empty NOERROR answer;
  - a name outside the cluster domain: REFUSED (there is no upstream: pods have no route
    off the machine).
Not done (CoreDNS does): TCP, SRV and PTR records, pod A records (`1-2-3-4.ns.pod...`),
`hostname.subdomain` records, ExternalName CNAMEs, upstream forwarding, caching rules, metrics.

Usage: dns.py --listen IP:PORT --server URL --ca FILE --token-file FILE [--domain cluster.local]
           [--ready-file FILE]
"""

import argparse
import ipaddress
import json
import queue
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.error
import urllib.request

TTL = 5
TYPE_A = 1
CLASS_IN = 1
RCODE_NOERROR, RCODE_FORMERR, RCODE_NXDOMAIN, RCODE_NOTIMP, RCODE_REFUSED = 0, 1, 3, 4, 5


# What dns.py says, written by a thread of its own: a write to the log can block while the
# disk is busy, and the answering loop must never wait on it. (Pods' lookups that timed out
# in CI were first blamed on this; the cause was the bridge's MAC changing under running pods,
# fixed in start.sh.)
SAID = queue.SimpleQueue()


def say(line):
    SAID.put(line)


def write_said():
    while True:
        print(SAID.get(), file=sys.stderr, flush=True)


class Api:
    def __init__(self, server, ca, token):
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca)
        self.token = token

    def open(self, path, timeout):
        req = urllib.request.Request(self.server + path, headers={"Authorization": "Bearer " + self.token})
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)


class Records:
    """Services and Endpoints by (namespace, name), and the names they answer."""

    def __init__(self):
        self.lock = threading.Lock()
        self.services = {}
        self.endpoints = {}
        self.answered = {}

    def replace(self, kind, items):
        with self.lock:
            table = self.services if kind == "services" else self.endpoints
            table.clear()
            for item in items:
                meta = item["metadata"]
                table[(meta["namespace"], meta["name"])] = item

    def apply(self, kind, event_type, obj):
        with self.lock:
            table = self.services if kind == "services" else self.endpoints
            meta = obj["metadata"]
            key = (meta["namespace"], meta["name"])
            if event_type == "DELETED":
                table.pop(key, None)
            else:
                table[key] = obj

    def lookup(self, namespace, name):
        """None if no such Service, else its A addresses."""
        found = self._lookup(namespace, name)
        # Each name's answer is logged when it changes (a test that fails to reach a peer
        # can then be read against what DNS said).
        with self.lock:
            changed = self.answered.get((namespace, name), "never") != found
            self.answered[(namespace, name)] = found
        if changed:
            say(f"dns.py: {name}.{namespace}.svc -> {found if found is not None else 'NXDOMAIN'}")
        return found

    def _lookup(self, namespace, name):
        with self.lock:
            svc = self.services.get((namespace, name))
            if svc is None:
                return None
            cluster_ip = svc.get("spec", {}).get("clusterIP")
            if cluster_ip and cluster_ip != "None":
                return [cluster_ip]
            ep = self.endpoints.get((namespace, name)) or {}
            addresses = []
            for subset in ep.get("subsets") or []:
                for address in subset.get("addresses") or []:
                    if address.get("ip") and address["ip"] not in addresses:
                        addresses.append(address["ip"])
            return addresses


def follow(api, records, kind, ready):
    """List, then watch from the list's resourceVersion; list again when the watch ends or expires."""
    while True:
        try:
            with api.open(f"/api/v1/{kind}", timeout=30) as resp:
                listing = json.load(resp)
            records.replace(kind, listing.get("items") or [])
            ready.set()
            version = listing["metadata"]["resourceVersion"]
            path = f"/api/v1/{kind}?watch=1&resourceVersion={version}&timeoutSeconds=240"
            with api.open(path, timeout=300) as resp:
                for line in resp:
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        break  # e.g. 410 Gone: list again
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        records.apply(kind, event["type"], event["object"])
        except (OSError, ValueError, KeyError, urllib.error.URLError) as err:
            say(f"dns.py: {kind}: {err}; listing again in 1 s")
            time.sleep(1)


def parse_question(packet):
    """(id, flags, labels, qtype, qclass, end offset of the question) or None."""
    if len(packet) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", packet[:6])
    if qdcount != 1 or flags & 0x8000:
        return None
    labels, pos = [], 12
    while True:
        if pos >= len(packet):
            return None
        length = packet[pos]
        pos += 1
        if length == 0:
            break
        if length & 0xC0 or pos + length > len(packet):
            return None
        labels.append(packet[pos:pos + length].decode("ascii", "replace").lower())
        pos += length
    if pos + 4 > len(packet):
        return None
    qtype, qclass = struct.unpack("!HH", packet[pos:pos + 4])
    return ident, flags, labels, qtype, qclass, pos + 4


def answer(packet, records, domain):
    parsed = parse_question(packet)
    if parsed is None:
        if len(packet) >= 2:
            return packet[:2] + struct.pack("!HHHHH", 0x8000 | RCODE_FORMERR, 0, 0, 0, 0)
        return None
    ident, flags, labels, qtype, qclass, end = parsed
    question = packet[12:end]
    opcode = (flags >> 11) & 0xF
    addresses, rcode = [], RCODE_NOERROR
    if opcode != 0:
        rcode = RCODE_NOTIMP
    elif labels[-len(domain):] != domain or qclass != CLASS_IN:
        rcode = RCODE_REFUSED
    else:
        local = labels[:-len(domain)]
        found = None
        if len(local) == 3 and local[2] == "svc":
            found = records.lookup(local[1], local[0])
        if found is None:
            rcode = RCODE_NXDOMAIN
        elif qtype == TYPE_A:
            addresses = found
    reply_flags = 0x8000 | (opcode << 11) | 0x0400 | (flags & 0x0100) | rcode  # QR, AA, RD copied
    out = struct.pack("!HHHHHH", ident, reply_flags, 1, len(addresses), 0, 0) + question
    for ip in addresses:
        out += struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL, 4) + ipaddress.IPv4Address(ip).packed
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--domain", default="cluster.local")
    parser.add_argument("--ready-file")
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    with open(args.token_file) as f:
        api = Api(args.server, args.ca, f.read().strip())
    records = Records()
    domain = args.domain.lower().strip(".").split(".")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, int(port)))
    threading.Thread(target=write_said, daemon=True).start()
    ready = [threading.Event(), threading.Event()]
    for kind, event in zip(("services", "endpoints"), ready):
        threading.Thread(target=follow, args=(api, records, kind, event), daemon=True).start()
    for event in ready:
        event.wait()
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("ready\n")
    say(f"dns.py: answering {args.domain} on {args.listen}")
    while True:
        packet, peer = sock.recvfrom(4096)
        reply = answer(packet, records, domain)
        if reply:
            sock.sendto(reply, peer)


if __name__ == "__main__":
    main()
