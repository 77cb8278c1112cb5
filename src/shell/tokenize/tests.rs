//! The tokenizer's coverage: quote removal, operators, redirections, and every place a substitution can hide.

use super::*;

fn argvs(line: &str) -> Vec<Vec<String>> {
    parse(line).unwrap().iter().map(|c| c.argv.iter().map(|w| w.text.clone()).collect()).collect()
}

/// The argv of every command found inside a substitution.
fn nested(line: &str) -> Vec<Vec<String>> {
    parse(line)
        .unwrap()
        .iter()
        .filter(|c| c.nested)
        .map(|c| c.argv.iter().map(|w| w.text.clone()).collect())
        .collect()
}

#[test]
fn quotes_are_removed_so_they_cannot_hide_words() {
    assert_eq!(argvs("rm '-rf' /"), vec![vec!["rm", "-rf", "/"]]);
    assert_eq!(argvs("r''m -r\"f\" /tmp/x"), vec![vec!["rm", "-rf", "/tmp/x"]]);
    assert_eq!(argvs(r"r\m -rf \/"), vec![vec!["rm", "-rf", "/"]]);
    assert_eq!(argvs("echo \"a b\" 'c d'"), vec![vec!["echo", "a b", "c d"]]);
}

#[test]
fn ansi_c_quotes_are_decoded_and_undecoded_escapes_make_the_word_dynamic() {
    let parsed = parse(r"$'\x72m' -rf $'\057' $'a\tb' $'\u0041'").unwrap();
    let words: Vec<(&str, bool)> = parsed[0].argv.iter().map(|w| (w.text.as_str(), w.dynamic)).collect();
    assert_eq!(words, vec![("rm", false), ("-rf", false), ("/", false), ("a\tb", false), (r"\u0041", true)]);
    assert_eq!(argvs(r"cat $'.e\156v'"), vec![vec!["cat", ".env"]]);
}

#[test]
fn operators_split_commands_and_substitutions_are_commands_too() {
    assert_eq!(
        argvs("cd src && ls -la | grep x; echo done &"),
        vec![vec!["cd", "src"], vec!["ls", "-la"], vec!["grep", "x"], vec!["echo", "done"]]
    );
    assert_eq!(argvs("(cd a; make) || true"), vec![vec!["cd", "a"], vec!["make"], vec!["true"]]);
    let parsed = parse("$(echo rm) -rf /").unwrap();
    assert!(parsed[0].argv[0].dynamic);
    assert_eq!(parsed[1].args(), vec!["echo", "rm"]);
    assert!(parsed[1].nested && !parsed[0].nested);
    assert_eq!(argvs("echo `whoami`")[1], vec!["whoami"]);
    assert_eq!(argvs("echo \"$(cat .env)\"")[1], vec!["cat", ".env"]);
    assert_eq!(argvs("if rm -rf x; then ls; fi"), vec![vec!["rm", "-rf", "x"], vec!["ls"]]);
}

#[test]
fn substitutions_are_found_in_every_syntax_that_runs_them() {
    for (line, inner) in [
        ("echo ${x:-$(rm -rf victim)}", vec!["rm", "-rf", "victim"]),
        ("echo \"${x:=$(rm -rf victim)}\"", vec!["rm", "-rf", "victim"]),
        ("echo ${x:+`rm -rf victim`}", vec!["rm", "-rf", "victim"]),
        ("echo ${x:-${y:-$(rm -rf victim)}}", vec!["rm", "-rf", "victim"]),
        ("echo $(( $(rm -rf victim; echo 1) + 1 ))", vec!["rm", "-rf", "victim"]),
        ("echo $(( 1 + `rm -rf victim` ))", vec!["rm", "-rf", "victim"]),
        ("cat <<EOF\n$(rm -rf victim)\nEOF", vec!["rm", "-rf", "victim"]),
        ("cat <<-EOF\n\t`rm -rf victim`\n\tEOF", vec!["rm", "-rf", "victim"]),
        ("cat <<EOF\n${x:-$(rm -rf victim)}\nEOF", vec!["rm", "-rf", "victim"]),
        ("diff <(rm -rf victim) f", vec!["rm", "-rf", "victim"]),
        ("tee >(rm -rf victim) < f", vec!["rm", "-rf", "victim"]),
        ("cat < <(rm -rf victim)", vec!["rm", "-rf", "victim"]),
        ("cat <<< \"$(rm -rf victim)\"", vec!["rm", "-rf", "victim"]),
        ("echo \"$(echo \"$(rm -rf victim)\")\"", vec!["echo", "$(rm -rf victim)"]),
        ("echo \"a $(echo ')' ; rm -rf victim) b\"", vec!["rm", "-rf", "victim"]),
    ] {
        let found = nested(line);
        assert!(found.contains(&inner.iter().map(|s| s.to_string()).collect()), "{line:?}: {found:?}");
    }
}

#[test]
fn quoted_heredocs_are_literal_and_unquoted_ones_expand() {
    let quoted = parse("cat <<'EOF'\n$(rm -rf /)\nEOF").unwrap();
    assert_eq!(quoted.len(), 1);
    let body = quoted[0].redirects[0].body.clone().unwrap();
    assert_eq!((body.text.as_str(), body.dynamic), ("$(rm -rf /)\n", false));
    let plain = parse("cat <<EOF\nhello\nEOF\necho after").unwrap();
    assert_eq!(plain[0].redirects[0].body.as_ref().map(|b| b.dynamic), Some(false));
    assert_eq!(plain[1].args(), vec!["echo", "after"]);
    let expands = parse("cat <<EOF\nhome is $HOME\nEOF").unwrap();
    assert_eq!(expands[0].redirects[0].body.as_ref().map(|b| b.dynamic), Some(true));
}

#[test]
fn expansions_and_globs_are_marked() {
    let parsed = parse("ls $HOME ${x} *.rs '*.md' a\\*b .{e,}nv {a} $ x$").unwrap();
    let marks: Vec<(&str, bool, bool)> =
        parsed[0].argv.iter().map(|w| (w.text.as_str(), w.dynamic, w.glob)).collect();
    assert_eq!(
        marks,
        vec![
            ("ls", false, false),
            ("$HOME", true, false),
            ("${x}", true, false),
            ("*.rs", false, true),
            ("*.md", false, false),
            ("a*b", false, false),
            (".{e,}nv", true, false),
            ("{a}", false, false),
            ("$", false, false),
            ("x$", false, false),
        ]
    );
    assert_eq!(parsed[0].argv[4].pattern, "\\*.md");
}

#[test]
fn redirections_keep_their_targets_and_fd_numbers_are_not_arguments() {
    let parsed = parse("make 2>&1 > build.log").unwrap();
    assert_eq!(parsed[0].args(), vec!["make"]);
    let targets: Vec<(&str, &str)> =
        parsed[0].redirects.iter().map(|r| (r.op.as_str(), r.target.text.as_str())).collect();
    assert_eq!(targets, vec![(">&", "1"), (">", "build.log")]);
    assert_eq!(parse("echo x >/dev/sda").unwrap()[0].redirects[0].target.text, "/dev/sda");
    assert_eq!(argvs("echo '2'>x"), vec![vec!["echo", "2"]]);
}

#[test]
fn heredoc_bodies_and_comments_are_not_commands() {
    let line = "cat <<'EOF' > notes.txt\nrm -rf /\nEOF\necho after # rm -rf /";
    assert_eq!(argvs(line), vec![vec!["cat"], vec!["echo", "after"]]);
}

#[test]
fn what_cannot_be_read_is_unparsable() {
    for line in
        ["echo 'oops", "echo \"oops", "echo $(oops", "echo ${x", "echo `x", "echo $((1 + 2)", "echo $'x"]
    {
        assert!(parse(line).is_err(), "{line:?}");
    }
    assert!(parse("echo $((cd x; ls) )").is_err(), "arithmetic or a subshell: cannot tell");
    let deep = format!("{}x{}", "$(".repeat(40), ")".repeat(40));
    assert!(parse(&deep).is_err());
}
