#!/usr/bin/env python3
"""The newest glibc an ELF binary needs: the highest GLIBC_x.y among its symbol versions.

Python 3 standard library only (no binutils). Reads the ELF section headers, the
version-needed records (.gnu.version_r: every library version the dynamic linker
will demand) and the dynamic symbols with their version indices (.gnu.version), and
prints each needed version with the symbols that need it, e.g.

    libc.so.6  GLIBC_2.17  (3 symbols: clock_gettime, ...)
    highest: GLIBC_2.17

    python3 tools/max-glibc.py FILE...                 # report
    python3 tools/max-glibc.py --max 2.17 FILE...      # and exit 1 if one needs more

A FILE ending in .whl is a wheel: the executables in its *.data/scripts/ are checked.
A binary that needs no GLIBC_ version (static, or no libc at all) passes any --max.
Exit codes: 0 fine, 1 a binary needs a glibc newer than --max, 2 unreadable input.
Same answer as `objdump -T FILE | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1`.
"""

import argparse
import re
import struct
import sys
import zipfile

SHT_DYNSYM = 11
SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF
GLIBC_RE = re.compile(r"^GLIBC_(\d+(?:\.\d+)*)$")


class NotElf(Exception):
    pass


def cstring(data, offset):
    end = data.index(b"\0", offset)
    return data[offset:end].decode("utf-8", "replace")


def sections(data):
    """[(type, offset, size, link)] of the section headers."""
    if data[:4] != b"\x7fELF":
        raise NotElf("not an ELF file")
    klass, order = data[4], data[5]
    if klass not in (1, 2) or order not in (1, 2):
        raise NotElf("unknown ELF class or byte order")
    e = "<" if order == 1 else ">"
    if klass == 2:
        (shoff,) = struct.unpack_from(e + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 0x3A)
        shdr = e + "IIQQQQIIQQ"
    else:
        (shoff,) = struct.unpack_from(e + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 0x2E)
        shdr = e + "IIIIIIIIII"
    if shoff == 0 or shnum == 0:
        raise NotElf("no section headers")
    out = []
    for i in range(shnum):
        _name, sh_type, _flags, _addr, offset, size, link, _info, _align, _entsize = (
            struct.unpack_from(shdr, data, shoff + i * shentsize)
        )
        out.append((sh_type, offset, size, link))
    return e, klass, out


def needed_versions(data):
    """{(library, version name): sorted symbol names needing it} of one ELF image."""
    e, klass, shdrs = sections(data)
    needs = {}  # version index -> (library, version)
    for sh_type, offset, size, link in shdrs:
        if sh_type != SHT_GNU_VERNEED:
            continue
        strtab = shdrs[link][1]
        pos = offset
        while True:
            _ver, cnt, vn_file, vn_aux, vn_next = struct.unpack_from(e + "HHIII", data, pos)
            library = cstring(data, strtab + vn_file)
            aux = pos + vn_aux
            for _ in range(cnt):
                _hash, _flags, other, name, vna_next = struct.unpack_from(e + "IHHII", data, aux)
                needs[other] = (library, cstring(data, strtab + name))
                aux += vna_next
            if vn_next == 0:
                break
            pos += vn_next
    symbols = {key: set() for key in needs.values()}
    dynsym = next((s for s in shdrs if s[0] == SHT_DYNSYM), None)
    versym = next((s for s in shdrs if s[0] == SHT_GNU_VERSYM), None)
    if dynsym and versym:
        entsize = 24 if klass == 2 else 16
        strtab = shdrs[dynsym[3]][1]
        for i in range(dynsym[2] // entsize):
            (index,) = struct.unpack_from(e + "H", data, versym[1] + 2 * i)
            key = needs.get(index & 0x7FFF)
            if key:
                (st_name,) = struct.unpack_from(e + "I", data, dynsym[1] + i * entsize)
                symbols[key].add(cstring(data, strtab + st_name))
    return {key: sorted(names) for key, names in symbols.items()}


def glibc_version(name):
    match = GLIBC_RE.match(name)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def images(path):
    """(label, bytes) of the ELF images to check in PATH."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as wheel:
            members = [m for m in wheel.namelist() if re.match(r"[^/]+\.data/scripts/[^/]+$", m)]
            if not members:
                raise NotElf("no *.data/scripts/ executable in the wheel")
            return [("%s:%s" % (path, m), wheel.read(m)) for m in members]
    with open(path, "rb") as f:
        return [(path, f.read())]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max", metavar="X.Y", help="fail (exit 1) if a binary needs a newer glibc")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args()
    limit = tuple(int(p) for p in args.max.split(".")) if args.max else None
    status = 0
    for path in args.files:
        try:
            checked = images(path)
        except (OSError, NotElf, zipfile.BadZipFile) as err:
            print("error: %s: %s" % (path, err), file=sys.stderr)
            status = 2
            continue
        for label, data in checked:
            try:
                versions = needed_versions(data)
            except (NotElf, struct.error, ValueError, IndexError) as err:
                print("error: %s: %s" % (label, err), file=sys.stderr)
                status = 2
                continue
            print(label)
            glibc = []
            for (library, name), names in sorted(
                versions.items(), key=lambda kv: (kv[0][0], glibc_version(kv[0][1]) or (), kv[0][1])
            ):
                shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
                print("  %-20s %-14s (%d symbols: %s)" % (library, name, len(names), shown))
                if name.startswith("GLIBC_"):
                    glibc.append(name)
            if not glibc:
                print("  highest: none (no GLIBC_ symbol version)")
                continue
            unknown = [n for n in glibc if glibc_version(n) is None]  # GLIBC_PRIVATE
            highest = max((n for n in glibc if glibc_version(n)), key=glibc_version, default=None)
            print("  highest: %s" % (highest or "none"))
            if limit is not None:
                if unknown:
                    print("error: %s needs %s: not in any released glibc" % (label, ", ".join(unknown)),
                          file=sys.stderr)
                    status = max(status, 1)
                if highest and glibc_version(highest) > limit:
                    print("error: %s needs %s, newer than glibc %s" % (label, highest, args.max),
                          file=sys.stderr)
                    status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
