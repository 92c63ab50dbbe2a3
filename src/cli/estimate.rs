//! `perfjournal estimate NAME key=value … [--json]`: the same core call as the API and
//! the page, printed as a worked chain. Exit code 2 for bad input, like a usage error.

use std::process::ExitCode;

use crate::core::estimate::{self, EstimateError, Inputs};

use super::EstimateArgs;

pub fn run(args: EstimateArgs) -> ExitCode {
    if args.list {
        print!("{}", list());
        return ExitCode::SUCCESS;
    }
    let Some(name) = args.name else {
        eprintln!("error: name an estimator, e.g. `perfjournal estimate decode-floor …`\n");
        eprint!("{}", list());
        return ExitCode::from(2);
    };
    let inputs = match parse_inputs(&args.inputs) {
        Ok(i) => i,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    match estimate::run(&name, &inputs) {
        Ok(chain) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&chain).expect("a chain serializes")
                );
            } else {
                print!("{}", chain.to_text());
            }
            ExitCode::SUCCESS
        }
        Err(EstimateError::UnknownEstimator(n)) => {
            eprintln!("error: no estimator named `{n}`\n");
            eprint!("{}", list());
            ExitCode::from(2)
        }
        Err(EstimateError::Invalid(errors)) => {
            if args.json {
                let body = serde_json::json!({ "error": { "status": 422, "fields": errors } });
                println!("{body}");
            }
            for e in errors {
                eprintln!("error: {}: {}", e.field, e.message);
            }
            ExitCode::from(2)
        }
    }
}

/// `key=value` words into inputs; `config=PATH` is read here (the core does no I/O).
fn parse_inputs(words: &[String]) -> Result<Inputs, String> {
    let mut inputs = Inputs::new();
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| format!("`{word}` is not key=value"))?;
        let value = if key == "config" {
            std::fs::read_to_string(value)
                .map_err(|e| format!("config: cannot read {value}: {e}"))?
        } else {
            value.to_string()
        };
        if inputs.insert(key.to_string(), value).is_some() {
            return Err(format!("{key}: given twice"));
        }
    }
    Ok(inputs)
}

fn list() -> String {
    let mut out = String::from("Estimators:\n");
    for info in estimate::registry() {
        out.push_str(&format!("  {:<17} {}\n", info.name, info.summary));
        let fields: Vec<&str> = info.fields.iter().map(|f| f.name).collect();
        out.push_str(&format!("  {:<17} inputs: {}\n", "", fields.join(", ")));
    }
    out
}
