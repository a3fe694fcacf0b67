use super::*;

#[test]
fn steps_get_their_lines() {
    let text = "# comment\nname: x\nsteps:\n  - advance: 1s\n\n  - send:\n      to: rebalancer\n      message: RebalanceNow\n";
    let script = parse("s.yaml", text).unwrap();
    assert_eq!(
        script
            .steps
            .iter()
            .map(|(line, _)| *line)
            .collect::<Vec<_>>(),
        vec![4, 6]
    );
}

#[test]
fn an_unknown_message_names_the_file_line_and_the_choices() {
    let text = "steps:\n  - send: {to: rebalancer, message: Explode}\n";
    assert_eq!(
        parse("bad.yaml", text).unwrap_err(),
        "bad.yaml:2: step 1: unknown message \"Explode\" for rebalancer: expected one of RebalanceNow, Resign"
    );
}
