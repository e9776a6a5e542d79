use super::*;
use proptest::prelude::*;

#[test]
fn bad_lines_are_errors_with_the_request_id_when_it_can_be_read() {
    let cases: [(&[u8], Option<Value>, &str); 5] = [
        (b"\xff\xfe{\"requestId\":\"2\"}", Some(Value::from("2")), "not valid UTF-8"),
        (b"{\"requestId\": 7, \"type\": \"nope\"}", Some(Value::from(7)), "cannot read"),
        (b"{\"type\":\"call_tool\",\"requestId\":\"x\"", Some(Value::from("x")), "cannot read"),
        (b"not json", None, "cannot read"),
        (b"{\"type\":\"call_tool\",\"requestId\":\"\xc3\x28\"}", None, "not valid UTF-8"),
    ];
    for (line, id, says) in cases {
        let Err((request_id, message)) = parse_line(line) else {
            panic!("{line:?} parsed");
        };
        assert_eq!(request_id, id, "{line:?}");
        assert!(message.contains(says), "{message}");
    }
}

#[test]
fn messages_never_echo_more_than_an_excerpt() {
    let long = format!("{{\"type\": \"{}\"}}", "x".repeat(100_000));
    let Err((_, message)) = parse_line(long.as_bytes()) else { panic!("parsed") };
    assert!(message.len() < EXCERPT_BYTES + 100, "{}", message.len());
}

#[tokio::test]
async fn lines_are_read_as_bytes_and_capped() {
    let mut big = vec![b'a'; MAX_LINE_BYTES + 10];
    big.extend_from_slice(b"\nnext\n\xff\n");
    let mut input = tokio::io::BufReader::new(&big[..]);
    let mut line = Vec::new();
    assert!(matches!(read_line(&mut input, &mut line).await.unwrap(), Line::TooLong));
    assert_eq!(line.len(), MAX_LINE_BYTES);
    assert!(matches!(read_line(&mut input, &mut line).await.unwrap(), Line::Complete));
    assert_eq!(line, b"next");
    assert!(matches!(read_line(&mut input, &mut line).await.unwrap(), Line::Complete));
    assert_eq!(line, b"\xff");
    assert!(matches!(read_line(&mut input, &mut line).await.unwrap(), Line::Eof));
}

/// Cases per run: `CORDON_FUZZ_CASES` (1 000 000 for the figure in the notes), else 20 000.
fn fuzz_cases() -> u32 {
    std::env::var("CORDON_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// Lines in the shape of the protocol with random damage: bytes, truncation, wrong types.
fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    let json_like = prop::sample::select(vec![
        r#"{"type":"list_tools","requestId":"1"}"#,
        r#"{"type":"call_tool","requestId":2,"toolName":"exec_command","arguments":{"cmd":"true"}}"#,
        r#"{"type":"call_tool","requestId":"3","toolName":"write_stdin","arguments":{"session_id":1,"chars":"x"}}"#,
        r#"{"type":"approval_response","requestId":"a1","decision":"approved"}"#,
        r#"{"type":"shutdown","requestId":null}"#,
    ]);
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        (json_like.clone(), any::<usize>(), any::<u8>()).prop_map(|(s, at, b)| {
            let mut bytes = s.as_bytes().to_vec();
            let at = at % (bytes.len() + 1);
            bytes.insert(at, b);
            bytes
        }),
        (json_like, any::<usize>())
            .prop_map(|(s, cut)| s.as_bytes()[..cut % (s.len() + 1)].to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]
    #[test]
    fn any_line_parses_or_is_a_short_error(line in line_strategy()) {
        if let Err((_, message)) = parse_line(&line) {
            prop_assert!(message.len() <= EXCERPT_BYTES + 100);
        }
    }
}

#[test]
fn hello_negotiates_a_shared_version_or_names_both() {
    let harness = Hello { min_version: 1, forms: vec!["exec_command"], host: None };
    let answer =
        serde_json::to_value(hello_response(harness.clone(), Value::from("h"), 2, None)).unwrap();
    assert_eq!(answer["type"], "hello_response");
    assert_eq!(answer["protocolVersion"], 2);
    assert_eq!(answer["forms"], serde_json::json!(["exec_command"]));
    let older = serde_json::to_value(hello_response(harness, Value::from("h"), 1, None)).unwrap();
    assert_eq!(older["protocolVersion"], 1);

    let far_end = Hello { min_version: 3, forms: vec!["exec_resolved"], host: None };
    for requested in [2, 4] {
        let refusal = serde_json::to_value(hello_response(
            far_end.clone(),
            Value::from("h"),
            requested,
            Some("9.9.9"),
        ))
        .unwrap();
        assert_eq!(refusal["type"], "error");
        let message = refusal["message"].as_str().unwrap();
        assert!(message.contains(&format!("cordon 9.9.9 protocol {requested}")), "{message}");
        assert!(message.contains(&format!("cordon {CORDON_VERSION}, protocol 3..=3")), "{message}");
    }
}
