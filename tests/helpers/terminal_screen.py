"""A person's terminal for the end-to-end suite: runs a program on a new pseudo-terminal,
answers cordon's questions, and rebuilds what the screen shows with the `pyte` VT emulator.

    terminal_screen.py CONFIG_JSON      run, print a JSON report
    terminal_screen.py --write FILE     write FILE to stdout in small pieces (the fuzz's command)

CONFIG: argv, cwd, env (added), stdin_null (the program's stdin is /dev/null instead of the
terminal), tty_owner (uid the terminal is given to, as a login would), answers (typed one per
question, a question being output that ends in "[n] no" and the "> " prompt), enter (what the Enter key
sends after an answer: "\n", or "\r" as a terminal's does), timeout, cols, rows, and
fuzz: {seed, random, structured, file} to write streams to FILE first and judge the screen
after each (see `fuzz_streams`).

The report: code, transcript (bytes as latin-1), rows ([text, [attributes of its non-blank
characters]]), state (title, icon name, modes, margins, character set, UTF-8, what the screen
answered), initial (the same for a fresh screen), termios (echo, icanon, opost, icrnl as the
program left the terminal), and for a fuzz: streams, failures.
"""
import json, os, random, select, signal, sys, time

PROMPT = b"[n] no\r\n> "


def write_pieces(path):
    data = open(path, "rb").read()
    rng = random.Random(len(data))
    i = 0
    while i < len(data):
        n = rng.choice([1, 1, 2, 3, 5, 8, 13, 64, 512])
        os.write(1, data[i:i + n])
        i += n
        if rng.random() < 0.05:
            time.sleep(0.001)


if len(sys.argv) == 3 and sys.argv[1] == "--write":
    write_pieces(sys.argv[2])
    sys.exit(0)

import pyte  # noqa: E402 (the writer above needs no emulator)


class Screen(pyte.Screen):
    """Records what the terminal would type back (reports, attributes)."""

    def __init__(self, cols, rows):
        super().__init__(cols, rows)
        self.answers = []

    def write_process_input(self, data):
        self.answers.append(data)


def new_screen(cols, rows):
    screen = Screen(cols, rows)
    return screen, pyte.ByteStream(screen)


def state(screen, stream):
    return {
        "title": screen.title,
        "icon_name": screen.icon_name,
        "modes": sorted(screen.mode),
        "margins": list(screen.margins) if screen.margins else None,
        "charset": screen.charset,
        "g0": charset_name(screen.g0_charset),
        "g1": charset_name(screen.g1_charset),
        "utf8": stream.use_utf8,
        "answers": screen.answers,
    }


def charset_name(table):
    if table == pyte.charsets.LAT1_MAP:
        return "ascii"
    if table == pyte.charsets.VT100_MAP:
        return "line drawing"
    return "other"


def attrs(char):
    return [char.fg, char.bg, char.bold, char.italics, char.underscore, char.strikethrough,
            char.reverse, char.blink]


# Sequences a relay must drop whole, for the structured streams: nothing of them may show.
DROPPED = [
    b"\x1b]0;PWNED-TITLE\x07", b"\x1b]2;PWNED-TITLE\x1b\\", b"\x1b]1;PWNED-ICON\x07",
    b"\x1b]52;c;cm0gLXJmIH4K\x07", b"\x1b]8;;http://evil/\x1b\\",
    b"\x1b]4;1;#000000\x07", b"\x1b]10;#000000\x07", b"\x1b]11;#000000\x1b\\",
    b"\x1bP$q\"p\x1b\\", b"\x1bP1;1|17/ab\x1b\\", b"\x1bPq#0;2;0;0;0#0~~\x1b\\",
    b"\x1b_Gf=100;AAAA\x1b\\", b"\x1b^pm\x1b\\", b"\x1bXsos\x1b\\",
    b"\x1b[?1000h", b"\x1b[?1002h", b"\x1b[?1003h", b"\x1b[?1004h", b"\x1b[?1005h",
    b"\x1b[?1006h", b"\x1b[?1015h", b"\x1b[?1h", b"\x1b[?2004l", b"\x1b[?2004h", b"\x1b[4h",
    b"\x1b[2h", b"\x1b[20h", b"\x1b[?1049h", b"\x1b[?47h", b"\x1b[?2026h", b"\x1b[?25l",
    b"\x1b[?7l", b"\x1b[?6h", b"\x1b[?5h", b"\x1b[?69h", b"\x1b[?3h", b"\x1b[5;10r",
    b"\x1b[>1u", b"\x1b[<u", b"\x1b[=5;1u", b"\x1b[?u", b"\x1b[>4;2m", b"\x1b=", b"\x1b>",
    b"\x1b(0", b"\x1b)0", b"\x1b*0", b"\x1b+0", b"\x1b%@", b"\x0e", b"\x0f", b"\x1bn", b"\x1bN",
    b"\x1b#8", b"\x1b#3", b"\x1bc", b"\x1bZ", b"\x05", b"\x07", b"\x1b[6n", b"\x1b[5n",
    b"\x1b[c", b"\x1b[>c", b"\x1b[=c", b"\x1b[?6n", b"\x1b[21t", b"\x1b[22;0t", b"\x1b[23;0t",
    b"\x1b[?1$p", b"\x1b[0x", b"\x1b[2 q", b"\x1b[!p", b"\x1b[3J", b"\x1b[5b",
    b"\x9b", b"\x9d", b"\x90", b"\x9c", b"\x85", b"\x8e", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x90",
    b"\xc2\x9c", b"\xc2\x85", b"\xc2\x8e",
]

# Pieces of random streams: sequence starts, terminators, parameters, C1 in both spellings.
TOKENS = [
    b"\x1b", b"[", b"]", b"P", b"X", b"^", b"_", b"\\", b"\x07", b"\xc2", b"\x9b", b"\x9d",
    b"\x90", b"\x9c", b"\x18", b"\x1a", b"0", b"1", b"2", b"6", b";", b":", b"?", b">", b"<",
    b"=", b" ", b"!", b"$", b"m", b"h", b"l", b"u", b"q", b"t", b"n", b"c", b"r", b"(", b"%",
    b"#", b"B", b"@", b"G", b"\n", b"\r", b"\x0e", b"\x05", b"a", b"\xe2\x82", b"\xac",
    b"\x1b]2;", b"\x1b]52;c;", b"\x1bP", b"\x1b[?1000h", b"\x1b[>1u", b"\x1b[31m", b"\x1b[5;9r",
    b"\x1b(0", b"\x1b%@", b"\x1b[6n",
]


def fuzz_streams(seed, n_random, n_structured):
    """[(bytes, expected text or None)]: random streams (judged by the terminal's state) and
    words interleaved with DROPPED sequences (judged by the words too)."""
    rng = random.Random(seed)
    streams = []
    for _ in range(n_random):
        count = rng.randrange(0, 160)
        streams.append((b"".join(rng.choice(TOKENS + [bytes([rng.randrange(256)])])
                                 for _ in range(count)), None))
    words = ["alpha", "beta", "gamma", "d\u00e9lta", "\u65e5\u672c", "\u20ac5", "x"]
    for _ in range(n_structured):
        text, data = "", b""
        for _ in range(rng.randrange(1, 12)):
            word = rng.choice(words) + " "
            text += word
            data += word.encode()
            for _ in range(rng.randrange(0, 3)):
                data += rng.choice(DROPPED)
        streams.append((data, text))
    rng.shuffle(streams)
    return streams


def framed(streams):
    """The streams between markers; CAN first ends whatever a stream left unfinished."""
    out = b""
    for i, (data, _) in enumerate(streams):
        out += b"\x18\r\n\x1b[2K@@S%d@@" % i + data + b"\x18@@E%d@@" % i
    return out + b"\x18\r\n"


def judge(transcript, streams, cols, rows):
    failures = []
    screen, stream = new_screen(cols, rows)
    initial = state(screen, stream)
    fed = 0
    for i, (_, text) in enumerate(streams):
        end = transcript.find(b"@@E%d@@" % i, fed)
        if end < 0:
            failures.append("stream %d: its end marker never showed" % i)
            break
        end += len(b"@@E%d@@" % i)
        stream.feed(transcript[fed:end])
        fed = end
        now = state(screen, stream)
        for key in ["title", "icon_name", "modes", "margins", "charset", "g0", "g1", "utf8",
                    "answers"]:
            if now[key] != initial[key]:
                failures.append("stream %d changed %s: %r -> %r" % (i, key, initial[key], now[key]))
        if text is not None:
            row = screen.display[screen.cursor.y]
            start = row.find("@@S%d@@" % i)
            stop = row.find("@@E%d@@" % i)
            shown = row[start + len("@@S%d@@" % i):stop] if 0 <= start < stop else None
            if shown != text:
                failures.append("stream %d: shows %r, not %r" % (i, shown, text))
        if failures:
            break
    return failures


def byte_failures(data):
    """What must never be in relayed output, whatever an emulator makes of it."""
    failures = []
    for needle in [b"\x1b]", b"\x1bP", b"\x1bX", b"\x1b^", b"\x1b_", b"\x1b(", b"\x1b%",
                   b"\x1b[?", b"\x1b[>", b"\x1b[<", b"\x1b[=", b"\x1bc", b"\x1bZ", b"\x05",
                   b"\x07", b"\x0e", b"\x0f"]:
        if needle in data:
            failures.append("%r at %d" % (needle, data.find(needle)))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return failures + ["not UTF-8: %s" % e]
    c1 = [c for c in text if "\x80" <= c <= "\x9f"]
    if c1:
        failures.append("C1 controls %r" % c1[:5])
    return failures


def main():
    cfg = json.loads(sys.argv[1])
    cols, rows = cfg.get("cols", 200), cfg.get("rows", 60)
    fuzz = cfg.get("fuzz")
    streams = None
    if fuzz:
        streams = fuzz_streams(fuzz["seed"], fuzz["random"], fuzz["structured"])
        with open(fuzz["file"], "wb") as f:
            f.write(framed(streams))
    answers = list(cfg.get("answers", []))
    fd, slave = os.openpty()
    name = os.ttyname(slave)
    pid = os.fork()
    if pid == 0:
        os.close(fd)
        os.login_tty(slave)
        os.chdir(cfg["cwd"])
        os.environ.update(cfg.get("env", {}))
        if cfg.get("tty_owner") is not None:
            os.fchown(0, cfg["tty_owner"], -1)
        if cfg.get("stdin_null"):
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
        os.execv(cfg["argv"][0], cfg["argv"])
    os.close(slave)
    out = b""
    asked = 0
    deadline = time.time() + cfg.get("timeout", 90)
    while time.time() < deadline:
        # A terminal whose output was stopped shows nothing: the deadline still holds.
        if not select.select([fd], [], [], max(0.0, deadline - time.time()))[0]:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        # A test of the suite writes this marker to every terminal it can open by name (to
        # show that a sandboxed command cannot): one write, so it lands whole; it is not
        # cordon's, and must not hide a question from this loop.
        out = (out + chunk).replace(b"\x1b]0;ESCAPED\x07ESCAPED\n", b"")
        if out.endswith(PROMPT) and out.count(PROMPT) > asked:
            asked += 1
            if not answers:
                break
            # cordon discards input typed before its question: give it time to finish asking.
            time.sleep(0.3)
            os.write(fd, answers.pop(0).encode() + cfg.get("enter", "\n").encode())
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    # The terminal's settings as the program left them.
    import termios
    probe = os.open(name, os.O_RDWR | os.O_NOCTTY)
    iflag, oflag, _, lflag, _, _, _ = termios.tcgetattr(probe)
    os.close(probe)
    settings = {"echo": bool(lflag & termios.ECHO), "icanon": bool(lflag & termios.ICANON),
                "opost": bool(oflag & termios.OPOST), "icrnl": bool(iflag & termios.ICRNL)}
    screen, stream = new_screen(cols, rows)
    initial = state(screen, stream)
    stream.feed(out)
    report = {
        "code": os.waitstatus_to_exitcode(status),
        "asked": asked,
        "transcript": out.decode("latin-1"),
        "rows": [[line.rstrip(), [attrs(c) for c in screen.buffer[y].values() if c.data.strip()]]
                 for y, line in enumerate(screen.display)],
        "state": state(screen, stream),
        "initial": initial,
        "termios": settings,
    }
    if streams is not None:
        first = out.find(b"@@S0@@")
        last = out.rfind(b"@@E%d@@" % (len(streams) - 1))
        relayed = out[first:last] if 0 <= first < last else b""
        report["streams"] = len(streams)
        report["failures"] = judge(out, streams, cols, rows) + byte_failures(relayed)
    print(json.dumps(report))


main()
