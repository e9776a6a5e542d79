use super::*;
use crate::executor::protocol::ApprovalDecision;
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
    let harness = Hello { min_version: 1, forms: vec![Form::ExecCommand], host: None };
    let answer =
        serde_json::to_value(hello_response(harness.clone(), Value::from("h"), 2, None)).unwrap();
    assert_eq!(answer["type"], "hello_response");
    assert_eq!(answer["protocolVersion"], 2);
    assert_eq!(answer["forms"], serde_json::json!(["exec_command"]));
    let older = serde_json::to_value(hello_response(harness, Value::from("h"), 1, None)).unwrap();
    assert_eq!(older["protocolVersion"], 1);

    let far_end = Hello { min_version: 5, forms: vec![Form::ExecResolved], host: None };
    for requested in [4, 6] {
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
        assert!(message.contains(&format!("cordon {CORDON_VERSION}, protocol 5..=5")), "{message}");
    }
}

/// Every message reads back as what was written, in both directions: the link and the
/// executor speak through the same types.
#[test]
fn every_message_reads_back_as_written() {
    use crate::orchestrator::ApprovalStage;
    use crate::session::{Note, Truncation};
    use cordon_policies::SandboxMode;

    let exec: ResolvedExec = serde_json::from_value(serde_json::json!({
        "argv": ["true"], "cwd": "/", "env": [["A", "b"]], "sandbox": {"kind": "none"},
        "approval": "granted", "tty": true}))
    .unwrap();
    let incoming = [
        Incoming::ListTools { request_id: Value::from("1") },
        Incoming::CallTool {
            request_id: Value::from(2),
            tool_name: "exec_command".into(),
            arguments: serde_json::json!({"cmd": "true"}),
        },
        Incoming::Shutdown { request_id: Value::Null },
        Incoming::ApprovalResponse {
            request_id: Value::from("a1"),
            decision: ApprovalDecision::ApprovedForSession,
        },
        Incoming::Hello {
            request_id: Value::from("h"),
            protocol_version: 2,
            cordon_version: Some("0.1.0".into()),
        },
        Incoming::ExecResolved { request_id: Value::from("c2"), exec: Box::new(exec) },
        Incoming::WriteResolved {
            request_id: Value::from("c3"),
            session_id: 3,
            chars: "q\n".into(),
            yield_time_ms: Some(250),
            max_output_tokens: None,
        },
        Incoming::CloseResolved { request_id: Value::from("c4"), session_id: 3 },
        Incoming::Cancel { request_id: None, call_request_id: Value::from("c2") },
    ];
    for message in incoming {
        let line = serde_json::to_string(&message).unwrap();
        assert_eq!(serde_json::from_str::<Incoming>(&line).unwrap(), message, "{line}");
    }

    let result = ResolvedResult {
        session_id: Some(3),
        exit: None,
        output: "out".into(),
        wall_time_ms: 512.25,
        truncated: Some(Truncation { original_tokens: 25, original_bytes: 100 }),
        notes: vec![Note::ClosedToMakeRoom { session_ids: vec![1] }],
    };
    let killed = ResolvedResult {
        session_id: None,
        exit: Some(crate::resolved::ProcessExit::Signal { signal: 9 }),
        output: String::new(),
        wall_time_ms: 1.0,
        truncated: None,
        notes: Vec::new(),
    };
    // A signal travels as a signal, not as the 137 a shell would print.
    assert_eq!(
        serde_json::to_value(&killed).unwrap()["exit"],
        serde_json::json!({"kind": "signal", "signal": 9})
    );
    let host = HostFacts {
        doctor: serde_json::json!({"modes": {}}),
        env: vec![("HOME".into(), "/home/me".into())],
        cwd: "/home/me".into(),
    };
    let outgoing = [
        Outgoing::ListToolsResponse {
            request_id: Value::from("1"),
            protocol_version: 2,
            tools: tools(),
        },
        Outgoing::HelloResponse {
            request_id: Value::from("h"),
            protocol_version: 2,
            cordon_version: CORDON_VERSION.into(),
            forms: vec![Form::ExecResolved],
            host: Some(host),
        },
        Outgoing::HelloResponse {
            request_id: Value::from("h"),
            protocol_version: 1,
            cordon_version: CORDON_VERSION.into(),
            forms: vec![Form::ExecCommand],
            host: None,
        },
        Outgoing::ResolvedResponse {
            request_id: Value::from("c2"),
            outcome: ResolvedOutcome::Success { result },
        },
        Outgoing::ResolvedResponse {
            request_id: Value::from("c3"),
            outcome: ResolvedOutcome::Error { message: "no".into() },
        },
        Outgoing::ResolvedResponse {
            request_id: Value::from("c5"),
            outcome: ResolvedOutcome::Success { result: killed },
        },
        Outgoing::CloseResponse {
            request_id: Value::from("c4"),
            outcome: CallOutcome::text("Session 3 closed".into()),
        },
        Outgoing::CallToolResponse {
            request_id: Value::from(2),
            tool_name: "write_stdin".into(),
            outcome: CallOutcome::Error { message: "unknown session id 7".into() },
        },
        Outgoing::ShutdownResponse { request_id: Value::from("9") },
        Outgoing::Error { request_id: None, message: "cannot read this line".into() },
        Outgoing::ApprovalRequest {
            request_id: "a1".into(),
            call_request_id: Value::from("2"),
            command: vec!["/bin/bash".into(), "-lc".into(), "touch x".into()],
            display: "/bin/bash -lc 'touch x'".into(),
            hidden_characters: false,
            cwd: "/work".into(),
            interactive: false,
            reason: "why".into(),
            stage: ApprovalStage::RetryWithoutSandbox,
            sandbox_mode: SandboxMode::DangerFullAccess,
            evidence: vec!["Read-only file system".into()],
            host: None,
        },
    ];
    for message in outgoing {
        let line = serde_json::to_string(&message).unwrap();
        assert_eq!(serde_json::from_str::<Outgoing>(&line).unwrap(), message, "{line}");
    }
}
