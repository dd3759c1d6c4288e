//! Findings as a SARIF 2.1.0 log, for code-scanning UIs (GitHub, VS Code's SARIF viewer).

use super::{RULES, Validation};
use gke_rl::diagnostic::Severity;

/// A validation as a SARIF 2.1.0 log, for code-scanning UIs: the findings as results, the rules
/// that could not run as the invocation's notifications.
pub fn sarif(validation: &Validation) -> serde_json::Value {
    let findings = &validation.findings;
    // SARIF calls an info finding a note.
    let level = |severity: Severity| match severity {
        Severity::Info => "note",
        other => other.as_str(),
    };
    let rules: Vec<serde_json::Value> = RULES
        .iter()
        .map(|r| serde_json::json!({ "id": r.code, "shortDescription": { "text": r.explanation() }, "defaultConfiguration": { "level": level(r.severity) } }))
        .collect();
    let results: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let d = &f.diagnostic;
            let mut result = serde_json::json!({
                "ruleId": d.code,
                "ruleIndex": RULES.iter().position(|r| r.code == d.code),
                "level": level(d.severity),
                "message": { "text": format!("{} (help: {})", d.message, d.help) },
                "locations": [{ "physicalLocation": {
                    "artifactLocation": { "uri": f.file },
                    "region": { "startLine": d.line, "startColumn": d.column }
                } }]
            });
            // SARIF 2.1.0, 3.55: a fix is a replacement of a region.
            if let Some(fix) = &d.fix {
                result["fixes"] = serde_json::json!([{
                    "description": { "text": fix.title },
                    "artifactChanges": [{
                        "artifactLocation": { "uri": f.file },
                        "replacements": [{
                            "deletedRegion": {
                                "startLine": fix.line, "startColumn": fix.column,
                                "endLine": fix.end_line, "endColumn": fix.end_column
                            },
                            "insertedContent": { "text": fix.text }
                        }]
                    }]
                }]);
            }
            result
        })
        .collect();
    let notifications: Vec<serde_json::Value> = validation
        .skipped
        .iter()
        .map(|s| {
            serde_json::json!({
                "descriptor": { "id": s.code, "index": RULES.iter().position(|r| r.code == s.code) },
                "level": "note",
                "message": { "text": format!("{}: not checked ({}: {})", s.code, s.missing, s.enable) }
            })
        })
        .collect();
    serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "gke-rl", "version": env!("CARGO_PKG_VERSION"), "rules": rules } },
            // Columns, fixes' included, count characters (SARIF 2.1.0, 3.14.24).
            "columnKind": "unicodeCodePoints",
            "invocations": [{ "executionSuccessful": true, "toolExecutionNotifications": notifications }],
            "results": results
        }]
    })
}
