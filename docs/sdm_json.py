#!/usr/bin/env python3
"""Read the output of `sdm ... --json` (docs/JSON.md) and print, per
command, the merged answer: its groups of ranks, and the events it caused.

    python3 sdm_json.py saved.jsonl                 # a saved stream
    sdm debug --json -e run -- ./prog | python3 sdm_json.py -
    python3 sdm_json.py -- sdm debug --json -e 'break compute' -e run \\
        -e wait -e 'print value' -- ./plain          # runs sdm itself

It exits with sdm's status when it runs sdm, else 1 when a command did
not go well. Python 3 standard library only.
"""

import json
import subprocess
import sys

VERSION = 1  # the schema this reader knows


def frame_text(f):
    if f.get("file"):
        return "%s at %s:%s" % (f.get("func", "??"), f["file"], f.get("line", 0))
    if f.get("from"):
        return "%s from %s" % (f.get("func", "??"), f["from"])
    return f.get("func", "??")


def value_text(v):
    """A group's value as one line: states, stacks and text as sdm prints
    them, anything else as compact JSON."""
    if v is None:
        return "ok"
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and "state" in v:
        text = v["state"]
        if "frame" in v:
            text += " in " + frame_text(v["frame"])
        if v["state"] == "exited":
            text = "killed by " + v["signal"] if v.get("signal") else "exited with code %d" % v.get("code", 0)
        return text
    if isinstance(v, list) and v and isinstance(v[0], dict) and "func" in v[0]:
        return " < ".join(frame_text(f) for f in v)
    return json.dumps(v, separators=(",", ":"))


def group_text(g):
    """One group of a reply: an answer, a failure, or a note of sdm's."""
    if "note" in g:
        rest = {k: v for k, v in g.items() if k not in ("ranks", "count", "note")}
        return g["note"] + (" " + json.dumps(rest, separators=(",", ":")) if rest else "")
    if g.get("status", "ok") != "ok":
        return "%s: %s" % (g["status"], g.get("error", ""))
    text = value_text(g.get("value"))
    return g["of"] + " = " + text if "of" in g else text


def read(lines, out=sys.stdout):
    """Print what each command answered; return whether every one went well."""
    all_ok = True
    for line in lines:
        line = line.strip()
        if not line:
            continue
        obj = json.loads(line)
        if obj.get("version") != VERSION:
            raise SystemExit("sdm_json: schema version %r, this reader knows %d" % (obj.get("version"), VERSION))
        kind = obj.get("type")
        if kind == "reply":
            cmd = obj["command"]
            all_ok = all_ok and obj["ok"]
            status = "ok" if obj["ok"] else "FAILED"
            print("#%d %s  [%s]  %s" % (obj["seq"], cmd["line"] or cmd["name"], obj["ranks"], status), file=out)
            if "error" in obj:
                print("    error: " + obj["error"], file=out)
            for g in obj["groups"]:
                print("    [%s] %s" % (g.get("ranks", ""), group_text(g)), file=out)
            for m in obj.get("messages", []):
                print("    " + m.replace("\n", "\n    "), file=out)
        elif kind == "event":
            source = " (from #%d)" % obj["command"] if "command" in obj else ""
            if obj["event"] == "output":
                text = obj.get("value", {}).get("text", "").rstrip("\n")
            else:
                text = obj["event"] + ": " + value_text(obj.get("value")) if obj.get("value") is not None else obj["event"]
            print("  [%s] %s%s" % (obj["ranks"], text, source), file=out)
        elif kind == "note":
            print("  note [%s] %s" % (obj.get("ranks", ""), obj["note"]), file=out)
        elif kind == "message":
            print("  " + obj["message"], file=out)
    return all_ok


def main(argv):
    if len(argv) >= 2 and argv[0] == "--":
        proc = subprocess.Popen(argv[1:], stdout=subprocess.PIPE, text=True)
        read(proc.stdout)
        return proc.wait()
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "-":
        return 0 if read(sys.stdin) else 1
    with open(argv[0]) as f:
        return 0 if read(f) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
