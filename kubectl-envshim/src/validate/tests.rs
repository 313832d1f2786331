//! The rules' table checked row by row against `cases.jsonl`: each row a
//! container (of a pod whose volumes are `cfg` and `data`), and the one path
//! refused, or null (accepted). No message holds the rows' values.

use std::collections::HashSet;

use serde_json::Value;

use super::{converted, every, rules};

const CASES: &str = include_str!("cases.jsonl");

#[test]
fn each_case_is_refused_at_its_path_or_accepted() {
    let volumes: HashSet<String> = ["cfg", "data"].map(String::from).into();
    let mut failures = Vec::new();
    for (n, line) in CASES.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("cases.jsonl:{}: {e}", n + 1));
        let c = row["container"].as_object().unwrap();
        let mut problems = converted(c, &volumes);
        problems.extend(every(c));
        let paths: Vec<String> = problems.iter().map(|p| p.path().map(ToString::to_string).unwrap_or_default()).collect();
        let expected: Vec<String> = row["refused"].as_str().map(String::from).into_iter().collect();
        if paths != expected {
            failures.push(format!("cases.jsonl:{}: refused {paths:?}, expected {expected:?}", n + 1));
        }
        for p in &problems {
            assert!(!p.to_string().contains("s3cr3t"), "cases.jsonl:{}: a value in {p}", n + 1);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every rule of the table is the one that refuses some case: no row that
/// no case specifies.
#[test]
fn every_rule_refuses_a_case() {
    let volumes: HashSet<String> = ["cfg", "data"].map(String::from).into();
    let mut said = HashSet::new();
    for line in CASES.lines().filter(|l| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).unwrap();
        let c = row["container"].as_object().unwrap();
        for p in converted(c, &volumes).into_iter().chain(every(c)) {
            said.insert(p.what);
        }
    }
    for rule in rules::CONVERTED.iter().chain(rules::EVERY) {
        assert!(said.iter().any(|w| w.contains(rule.what)), "no case is refused by {} ({})", rule.field, rule.what);
    }
}
