#!/usr/bin/env python3
"""Reads what the NVIDIA driver's shader disk cache holds (bench-only diagnostic).

Dawn does not report a pipeline's register count; the NVIDIA driver keeps compiled pipelines in its
disk cache (__GL_SHADER_DISK_CACHE_PATH). This scans the files under a folder for embedded ELF
images (cubins) and prints, per image, each kernel's register count (the .text.<name> section's
sh_info >> 24 and EIATTR_REGCOUNT of .nv.info), its code size, shared memory (.nv.shared.*) and
frame/stack sizes (spills). Anything it cannot parse is reported as such.
Usage: python3 bench/experiments/nv-shader-cache.py <folder>
"""
import os
import struct
import sys

EIATTR = {0x2F: "REGCOUNT", 0x11: "FRAME_SIZE", 0x12: "MIN_STACK_SIZE", 0x1B: "MAX_STACK_SIZE", 0x10: "MAX_THREADS"}


def parse_elf(buf, at):
    if buf[at + 4] != 2:  # 64-bit only
        return None
    (shoff,) = struct.unpack_from("<Q", buf, at + 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", buf, at + 0x3A)
    if shentsize != 64 or shnum == 0 or shnum > 4096 or at + shoff + shnum * 64 > len(buf):
        return None
    secs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from("<IIQQQQIIQQ", buf, at + shoff + i * 64)
        secs.append(dict(name=name, type=typ, off=off, size=size, info=info, link=link))
    strtab = secs[shstrndx]
    def nm(o):
        s = at + strtab["off"] + o
        e = buf.index(b"\0", s)
        return buf[s:e].decode("latin1")
    for s in secs:
        s["nm"] = nm(s["name"])
    out = {"sections": len(secs), "kernels": {}}
    for s in secs:
        n = s["nm"]
        if n.startswith(".text."):
            k = out["kernels"].setdefault(n[6:], {})
            k["regs(sh_info>>24)"] = s["info"] >> 24
            k["code bytes"] = s["size"]
        elif n.startswith(".nv.shared."):
            out["kernels"].setdefault(n[11:], {})["shared bytes"] = s["size"]
        elif n.startswith(".nv.local."):
            out["kernels"].setdefault(n[10:], {})["local bytes"] = s["size"]
        elif n.startswith(".nv.info"):
            p = at + s["off"]
            end = p + s["size"]
            attrs = []
            while p + 4 <= end:
                fmt, attr = buf[p], buf[p + 1]
                if fmt == 4:
                    (sz,) = struct.unpack_from("<H", buf, p + 2)
                    payload = buf[p + 4 : p + 4 + sz]
                    p += 4 + sz
                    if attr in EIATTR and sz == 8:
                        sym, val = struct.unpack("<II", payload)
                        attrs.append(f"{EIATTR[attr]}={val}")
                else:
                    (v,) = struct.unpack_from("<H", buf, p + 2)
                    p += 4
                    if attr in EIATTR:
                        attrs.append(f"{EIATTR[attr]}={v}")
            if attrs:
                out["kernels"].setdefault(n[9:] or "(global)", {})["nv.info"] = " ".join(attrs)
    return out


def main(folder):
    files = 0
    images = 0
    for dirpath, _, names in os.walk(folder):
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            try:
                buf = open(p, "rb").read()
            except OSError as e:
                print(p, "unreadable", e)
                continue
            files += 1
            print(f"{p}: {len(buf)} bytes, starts {buf[:8].hex()}")
            at = buf.find(b"\x7fELF")
            while at >= 0:
                try:
                    r = parse_elf(buf, at)
                except Exception as e:  # noqa: BLE001 - report and go on
                    r = {"error": repr(e)}
                if r:
                    images += 1
                    print(f"  ELF at {at}: {r.get('sections')} sections")
                    for k, v in sorted((r.get("kernels") or {}).items()):
                        print(f"    {k}: {v}")
                    if "error" in r:
                        print("   ", r["error"])
                at = buf.find(b"\x7fELF", at + 4)
    print(f"{files} files, {images} ELF images")


main(sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/nvidia/GLCache"))
