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

/// Every script of the repository, and every step example of docs/scripts.md, parses; each
/// step's line is the line of its `-` (taken from the YAML's own positions).
#[test]
fn every_script_of_the_repository_and_its_docs_parses_with_each_step_on_its_line() {
    let mut inputs: Vec<(String, String)> = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir("tests/scripts")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        inputs.push((
            file.display().to_string(),
            std::fs::read_to_string(&file).unwrap(),
        ));
    }
    let doc = std::fs::read_to_string("docs/scripts.md").unwrap();
    // The first block is the file's outline, its steps elided (`- …`); the rest are steps.
    for (index, block) in doc.split("```yaml\n").skip(2).enumerate() {
        let block = block.split("```").next().unwrap();
        let indented: String = block.lines().map(|line| format!("  {line}\n")).collect();
        inputs.push((
            format!("docs/scripts.md block {}", index + 2),
            format!("steps:\n{indented}"),
        ));
    }
    assert!(inputs.len() > 30, "{} inputs", inputs.len());
    for (path, text) in inputs {
        let script = parse(&path, &text).unwrap_or_else(|error| panic!("{error}"));
        let lines: Vec<&str> = text.lines().collect();
        for (line, step) in &script.steps {
            let written = lines[line - 1].trim_start();
            assert!(
                written.starts_with("- "),
                "{path}:{line} is not where {step:?} starts: {written:?}"
            );
        }
    }
}
