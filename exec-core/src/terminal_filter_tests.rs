use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

fn filtered(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    EscapeFilter::default().filter(input, &mut out);
    out
}

/// The filter's output, fed in the given pieces.
fn filtered_in(pieces: &[&[u8]]) -> Vec<u8> {
    let mut filter = EscapeFilter::default();
    let mut out = Vec::new();
    for piece in pieces {
        filter.filter(piece, &mut out);
    }
    out
}

/// Panics unless `out` is made only of what the filter may write: printable UTF-8 text (no C1,
/// no DEL), the cursor-moving C0 controls, and the kept sequences in their canonical spelling
/// (`ESC [` digits `;` `:` final, or `ESC` one of `78DEM`). Written without the parser the
/// filter uses, so it judges that parser too.
fn assert_only_kept(out: &[u8]) {
    let text = std::str::from_utf8(out)
        .unwrap_or_else(|e| panic!("not UTF-8 at {}: {:?}", e.valid_up_to(), out));
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b => {
                let next = *bytes.get(i + 1).unwrap_or_else(|| panic!("a lone ESC: {text:?}"));
                if b"78DEM".contains(&next) {
                    i += 2;
                    continue;
                }
                assert_eq!(next, b'[', "ESC {:?} at {i}: {text:?}", next as char);
                let mut j = i + 2;
                while j < bytes.len() && (bytes[j].is_ascii_digit() || b";:".contains(&bytes[j])) {
                    j += 1;
                }
                let last = *bytes.get(j).unwrap_or_else(|| panic!("unfinished CSI: {text:?}"));
                assert!(
                    b"mHfABCDEFG`adeIZLMPX@STJKsu".contains(&last),
                    "CSI final {:?} at {i}: {text:?}",
                    last as char
                );
                let params = &text[i + 2..j];
                if b"JK".contains(&last) {
                    assert!(["0", "1", "2"].contains(&params), "{params:?}{}", last as char);
                }
                if b"su".contains(&last) {
                    assert_eq!(
                        params, "",
                        "CSI {params}{} is not a bare save/restore",
                        last as char
                    );
                }
                if params.contains(':') {
                    assert_eq!(last, b'm', "sub-parameters outside SGR: {text:?}");
                }
                i = j + 1;
            }
            0x08..=0x0d => i += 1,
            byte if byte < 0x20 || byte == 0x7f => panic!("control {byte:#04x} at {i}: {text:?}"),
            _ => i += 1,
        }
    }
    for c in text.chars() {
        assert!(!('\u{80}'..='\u{9f}').contains(&c), "C1 {c:?} in {text:?}");
    }
}

#[test]
fn text_colours_and_cursor_movement_pass_unchanged() {
    let kept: &[u8] = b"plain \x1b[1;31mred\x1b[0m \x1b[38:2:0:10:20:30mrgb\x1b[38;5;208m\x1b[2K\r\
                        \x1b[3A\x1b[10;20H\x1b[5G\x1b[0J\x1b[1K done\n\ttab\x08\x0b\x0c \
                        caf\xc3\xa9 \xc2\xa0 \xe6\x97\xa5\xf0\x9f\x98\x80 \x1b7\x1b8\x1b[s\x1b[u\x1bM\x1bD\x1bE";
    assert_eq!(filtered(kept), kept);
    assert_only_kept(kept);
}

#[test]
fn strings_reports_modes_charsets_and_c1_controls_are_dropped() {
    let cases: &[(&[u8], &[u8])] = &[
        // Strings: OSC (title, clipboard, hyperlink, colours), DCS, APC, PM, SOS.
        (b"a\x1b]0;title\x07b", b"ab"),
        (b"a\x1b]52;c;cm0gLXJmIH4K\x1b\\b", b"ab"),
        (b"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", b"alinkb"),
        (b"a\x1b]10;#000000\x07\x1b]11;#000000\x07\x1b]4;1;#000000\x07b", b"ab"),
        (b"a\x1bP$q\"p\x1b\\b\x1bP1000p\x1b\\c", b"abc"),
        (b"a\x1b_Gf=100;AAAA\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d", b"abcd"),
        // Requests the terminal answers by typing into the user's input.
        (b"a\x1b[6n\x1b[c\x1b[>c\x1b[=c\x1b[21t\x1b[14t\x1b[?1$p\x1b[5n\x1b[?6nb", b"ab"),
        (b"a\x1bZ\x05b\x1b[0x\x1b[?u\x1b[>q", b"ab"),
        // Modes: mouse, focus, cursor keys, keypad, bracketed paste, insert, KAM, LNM,
        // alternate screen, synchronized output, cursor visibility, autowrap, origin.
        (
            b"a\x1b[?1000h\x1b[?1002h\x1b[?1003h\x1b[?1005h\x1b[?1006h\x1b[?1015h\x1b[?1004h\
              \x1b[?1h\x1b=\x1b>\x1b[?2004l\x1b[4h\x1b[2h\x1b[20h\x1b[12l\x1b[?1049h\x1b[?2026h\
              \x1b[?25l\x1b[?7l\x1b[?6h\x1b[?69h\x1b[?5hb",
            b"ab",
        ),
        // Keyboard protocols: kitty (push, pop, set, query) and modifyOtherKeys.
        (b"a\x1b[>1u\x1b[<u\x1b[=1;1u\x1b[1u\x1b[>4;2m\x1b[>4mb", b"ab"),
        // Character sets, shifts, line sizes, full reset, DECSTR, scroll region, tab stops,
        // cursor style, the scrollback.
        (
            b"a\x1b(0\x1b)0\x1b*0\x1b+0\x1b%@\x1b%G\x0e\x0f\x1bn\x1bo\x1bN\x1bO\x1b#8\x1b#3\x1bc\
              \x1b[!p\x1b[5;10r\x1b[r\x1bH\x1b[3g\x1b[2 q\x1b[3J\x1b[5;5s\x07b",
            b"ab",
        ),
        // C1 controls, 8-bit and spelled in UTF-8.
        (b"a\x9b6n\x9d0;t\x07\x90q\x9c\x85b", b"a6n0;tqb"),
        (b"a\xc2\x9d0;title\x07b\xc2\x9b6n\xc2\x90\xc2\x9c\xc2\x85", b"a0;titleb6n"),
        // A UTF-8 lead byte, then ESC, then a C1 byte: no C1 is made of them.
        (b"A\xc2\x1b\x9d2;TITLE\x07", b"A\xef\xbf\xbd;TITLE"),
        (b"A\xc2\x1b\x9b6n", b"A\xef\xbf\xbdn"),
    ];
    for (input, expected) in cases {
        let out = filtered(input);
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(expected),
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert_only_kept(&out);
    }
}

/// Inputs whose sequences a split read could misjudge.
const SPLIT_CASES: &[&[u8]] = &[
    b"x\x1b]0;ti\x1b]tle\x07y\x1b[3\x31mz\x1b[2\x31t.",
    b"A\xc2\x1b\x9d2;TITLE\x07B\xc2\x9b6n\xe2\x82\xac\x1b[?1000h\x1b[31mC",
    b"\x1bP1$r\x1b\\\x1b_x\x07y\x1b\\z\x1bX\x1b]52;c;eA==\x07w\x1b(0q\x1b%@\xf0\x9f\x98\x80",
    b"\x1b[38:2::1:2:3m\x1b[>4;2m\x1b[<u\x1b[?2004l\x1b[6n\x1b7\x1b8\x1b[10;1H\xc3",
];

#[test]
fn a_sequence_split_across_reads_is_judged_whole() {
    for input in SPLIT_CASES {
        let whole = filtered(input);
        assert_only_kept(&whole);
        for first in 0..=input.len() {
            for second in first..=input.len() {
                let pieces = [&input[..first], &input[first..second], &input[second..]];
                assert_eq!(
                    filtered_in(&pieces),
                    whole,
                    "split at {first} and {second} of {:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }
}

#[test]
fn a_character_split_across_reads_loses_nothing_after_it() {
    let pieces: [&[u8]; 3] = [b"caf\xc3", b"\xa9x\xe2\x82", b"\xacy\xc3\xa9"];
    assert_eq!(String::from_utf8(filtered_in(&pieces)).unwrap(), "caf\u{e9}x\u{20ac}y\u{e9}");
}

#[test]
fn an_endless_string_is_held_in_bounded_memory_and_ends_at_its_terminator() {
    let mut input = b"\x1b]0;".to_vec();
    input.extend(std::iter::repeat_n(b'a', 1 << 20));
    input.extend_from_slice(b"\x07visible");
    let mut filter = EscapeFilter::default();
    let before = std::mem::size_of_val(&filter);
    let mut out = Vec::new();
    filter.filter(&input, &mut out);
    assert_eq!(out, b"visible");
    // The parser's buffers are fixed-size: the string was dropped as it came.
    assert_eq!(std::mem::size_of_val(&filter), before);
    let mut long = b"\x1b[".to_vec();
    long.extend(std::iter::repeat_n(b';', 100));
    long.extend_from_slice(b"mafter");
    assert_eq!(filtered(&long), b"after");
}

#[test]
fn a_terminal_that_is_not_utf8_gets_no_byte_above_ascii() {
    let mut filter = EscapeFilter::new(Charset::EightBit);
    let mut out = Vec::new();
    filter.filter("caf\u{e9} \u{11b}\u{9b}6n \x1b[1mok".as_bytes(), &mut out);
    assert_eq!(out, b"caf? ?6n \x1b[1mok");
    for (locale, charset) in [
        (None, Charset::Utf8),
        (Some("C"), Charset::Utf8),
        (Some("en_US.UTF-8"), Charset::Utf8),
        (Some("de_DE.utf8@euro"), Charset::Utf8),
        (Some("en_US.ISO-8859-1"), Charset::EightBit),
        (Some("fr_FR.ISO-8859-15@euro"), Charset::EightBit),
    ] {
        assert_eq!(Charset::of_locale(locale), charset, "{locale:?}");
    }
}

/// Bytes and pieces that make sequences, for random streams.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    let tokens: &[&[u8]] = &[
        b"\x1b",
        b"[",
        b"]",
        b"P",
        b"X",
        b"^",
        b"_",
        b"\\",
        b"\x07",
        b"\xc2",
        b"\x9b",
        b"\x9d",
        b"\x90",
        b"\x9c",
        b"\x18",
        b"\x1a",
        b"0",
        b"1",
        b"2",
        b"6",
        b";",
        b":",
        b"?",
        b">",
        b"<",
        b"=",
        b" ",
        b"!",
        b"$",
        b"m",
        b"h",
        b"l",
        b"u",
        b"q",
        b"t",
        b"n",
        b"c",
        b"r",
        b"(",
        b"%",
        b"#",
        b"B",
        b"\n",
        b"\r",
        b"\x0e",
        b"\x05",
        b"a",
        b"\xe2\x82",
        b"\xac",
        b"\x1b]52;c;",
        b"\x1b]0;T",
        b"\x1bP",
        b"\x1b[?1000h",
        b"\x1b[>1u",
        b"\x1b[31m",
    ];
    prop_oneof![
        3 => proptest::sample::select(tokens).prop_map(<[u8]>::to_vec),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..120).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn no_stream_makes_anything_but_kept_text_and_sequences(input in stream()) {
        let out = filtered(&input);
        assert_only_kept(&out);
        // What the filter writes is its own fixed point: nothing in it is dropped or changed
        // when filtered again.
        prop_assert_eq!(&filtered(&out), &out);
        // And the terminal's parser is back in its ground state after it.
        let mut closed = out;
        closed.extend_from_slice(b"Z");
        prop_assert!(filtered(&closed).ends_with(b"Z"));
    }

    #[test]
    fn no_read_boundary_changes_the_output(
        input in stream(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for cut in cuts {
            pieces.push(&input[start..cut]);
            start = cut;
        }
        pieces.push(&input[start..]);
        prop_assert_eq!(filtered_in(&pieces), filtered(&input));
    }
}
