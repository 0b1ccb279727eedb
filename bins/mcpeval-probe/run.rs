//! One probe run: refuse what cannot be judged, pin the binding, run the
//! case, check the binding again, sign and print the result.

use std::io::Write;

use mcp::StderrTail;
use mcp::probe::{self, Setup};
use shared::Error;
use shared::Result;
use shared::escape;
use shared::file_arg::Input;
use shared::finding::{DefectClass, Probe};
use shared::findings::Findings;
use shared::home::Home;
use shared::manifest::{Case, Manifest};
use shared::probe_result::{ProbeResult, SCHEMA, StepClaim, Verdict};
use shared::sibling::{self, Failure};
use store::binding;
use store::credit::{self, Claim, Subject};
use store::journal::Writer;
use store::salt::Salt;
use store::signed::Signed;

use crate::PROGRAM;
use crate::args::Config;
use crate::{output, target};

/// Runs the configured case of `manifest`; returns the exit status of its
/// verdict.
pub fn run(config: &Config, manifest: &Manifest) -> Result<u8> {
    let case = select(manifest, config)?;
    let view = view(config, &[case])?;
    let admitted = admit(case, config, &view)?;
    let mut runner = Runner::new(config)?;
    let result = runner.run(manifest, case, admitted)?;
    output::print(&result, config.format)?;
    explain(&result, runner.server_stderr(), config.hint);
    Ok(result.result.exit_status())
}

/// The store to read what `cases` are about from: with a team database,
/// the team view, brought up to date for their findings by
/// `mcpeval-findings --finding …` (so this program links no database
/// client); its refusal (status 3 for a refused row of their findings, 6
/// for a database this store cannot use) is ours. A forged row of another
/// finding stops nothing here.
pub fn view(config: &Config, cases: &[&Case]) -> Result<Home> {
    if shared::config::database_url(&config.home)?.is_none() {
        return Ok(config.home.clone());
    }
    let mut args = vec!["--format", "json"];
    for case in cases {
        args.extend(["--finding", case.finding.as_str()]);
    }
    match sibling::json::<Findings>("findings", &config.home, &args) {
        Ok(_) => Ok(config.home.team_view()),
        Err(failure) => Err(failure.own_error("findings").unwrap_or_else(|| {
            let why = match failure {
                Failure::Missing => "is not installed beside it or on PATH".to_owned(),
                Failure::Io(e) => format!("could not be run: {e}"),
                Failure::Failed { ended, .. } => ended.describe(),
                Failure::Unreadable { .. } => "printed output it cannot read".to_owned(),
            };
            Error::unavailable(format!(
                "{PROGRAM} reads a team's findings through mcpeval-findings, which {why}; \
                 nothing was run"
            ))
            .with_hint("install mcpeval-probe and its siblings from the same release")
        })),
    }
}

/// What a case was admitted with.
pub struct Admitted {
    /// Attempts for degradation and error-honesty.
    pub attempts: u32,
    /// What the finding is about, when the store knows it.
    pub subject: Option<Subject>,
    /// What each step asserts, as the result carries it.
    pub steps: Vec<StepClaim>,
    /// The tool of a contract-violation finding, whose outputSchema the
    /// run must be able to check.
    pub promised_tool: Option<String>,
}

/// Refuses a case that cannot be judged (placeholders left) or cannot earn
/// its finding credit by the proof rules (see `store::credit`), before
/// any server starts; returns its attempt budget and the finding's
/// subject. A finding this store does not know is probed all the same:
/// the result carries what the rules need, and `verify --record` holds it
/// to them where the finding is known.
pub fn admit(case: &Case, config: &Config, view: &Home) -> Result<Admitted> {
    const OUTCOME: &str = "nothing was run";
    refuse_placeholders(case, &config.manifest)?;
    let steps = StepClaim::of(case);
    let known = match credit::subject(view, &case.finding)? {
        Some(_) => Some(credit::require_known(view, &case.finding, OUTCOME)?),
        None => None,
    };
    // An index that lists the finding without its subject (written by
    // hand, or by an earlier release) still sizes the attempts and tells
    // a false-success finding.
    let indexed = match &known {
        Some(_) => None,
        None => store::index_db::finding_facts(view, &case.finding)?,
    };
    let rate = match &known {
        Some(k) => k.evidence.failure_rate,
        None => indexed.as_ref().and_then(|f| f.failure_rate),
    };
    let class = match &known {
        Some(k) => k.evidence.defect_class,
        None => indexed.as_ref().and_then(|f| f.defect_class),
    };
    let false_success = class == Some(DefectClass::FalseSuccess);
    // A contract-violation finding's tool must still declare the schema
    // its results broke: the probe checks that after listing the tools.
    let promised_tool = match (&known, class) {
        (Some(k), Some(DefectClass::ContractViolation)) => Some(k.subject.tool.clone()),
        (None, Some(DefectClass::ContractViolation)) => indexed.and_then(|f| f.tool),
        _ => None,
    };
    let attempts = probe::attempt_budget(case, rate);
    if let Some(known) = &known {
        let claim = Claim {
            case: &case.id,
            probe: case.probe,
            steps: &steps,
            budget: attempts,
        };
        credit::check(
            &config.manifest.to_string(),
            &case.finding,
            known,
            &claim,
            OUTCOME,
        )?;
    }
    if (config.require_oracle || false_success) && !case.has_oracle() {
        return Err(Error::rejected(format!(
            "{}: case \"{}\" cannot prove a false-success repair: it needs an instruction-fidelity \
             expectation, or a workflow step, with a result assertion or an expected error; {OUTCOME}",
            config.manifest,
            case.id
        ))
        .with_hint(
            "add required_result_paths or equals_paths that tell the bug from the repair, or expect an error",
        ));
    }
    if matches!(case.probe, Probe::Degradation | Probe::ErrorHonesty)
        && case.attempts.is_none()
        && rate.is_none()
    {
        note(format_args!(
            "no failure rate for {} in the index; running the cap of {attempts} attempts",
            case.finding
        ));
    }
    Ok(Admitted {
        attempts,
        subject: known.map(|k| k.subject),
        steps,
        promised_tool,
    })
}

/// What every run of one invocation shares: the salt, the journal, the
/// evaluator's fingerprint.
pub struct Runner<'c> {
    config: &'c Config,
    salt: Salt,
    journal: Writer,
    evaluator: [u8; 32],
    /// The end of the server's stderr when the last run's handshake failed.
    server_stderr: Option<StderrTail>,
}

impl<'c> Runner<'c> {
    pub fn new(config: &'c Config) -> Result<Runner<'c>> {
        Ok(Runner {
            salt: Salt::load_or_create(&config.home)?,
            journal: Writer::new(&config.home)?,
            evaluator: binding::evaluator()?,
            server_stderr: None,
            config,
        })
    }

    /// Pins the binding, runs `case` against a fresh server, checks the
    /// binding again and signs the result.
    pub fn run(
        &mut self,
        manifest: &Manifest,
        case: &Case,
        admitted: Admitted,
    ) -> Result<ProbeResult> {
        let config = self.config;
        let salt = &self.salt;
        let prepared = target::prepare(salt, manifest, case, config, &self.evaluator)?;
        let run_id = uuid::Uuid::new_v4();
        let setup = Setup {
            target: prepared.target,
            handshake_timeout: config.handshake_timeout,
            attempts: admitted.attempts,
            salt,
            session: format!("s-{}", salt.id16(&[run_id.as_bytes()])),
            fallback_server: prepared.fallback_server,
            finding_server: admitted.subject,
            promised_tool: admitted.promised_tool,
        };
        let pinned = prepared.pinned;

        let started_at = shared::time::now_rfc3339();
        let verdicted = probe::run(case, setup, &mut self.journal)?;
        self.server_stderr = verdicted.server_stderr;
        let finished_at = shared::time::now_rfc3339();
        pinned.recheck().map_err(binding::Changed::into_error)?;

        let mut result = ProbeResult {
            schema: SCHEMA.to_owned(),
            run_id: shared::id::RunId::from_uuid(run_id),
            finding: case.finding.clone(),
            case: case.id.clone(),
            probe: case.probe.as_str().to_owned(),
            tools: case
                .tools()
                .iter()
                .map(|t| credit::name_key(t).into_owned())
                .collect(),
            steps: admitted.steps,
            budget: Some(admitted.attempts),
            server: verdicted.server,
            checked: verdicted.checked,
            definition: Some(pinned.definition.clone()),
            target: Some(pinned.target.clone()),
            binding: pinned.fingerprint.clone(),
            result: verdicted.verdict,
            reason: verdicted.reason,
            detail: verdicted.detail,
            contract: verdicted.contract,
            attempts: verdicted.attempts,
            started_at,
            finished_at,
            mac: String::new(),
        };
        result.sign(salt);
        Ok(result)
    }

    /// What the server of the last run wrote last on stderr, when its
    /// handshake failed.
    pub fn server_stderr(&self) -> Option<&StderrTail> {
        self.server_stderr.as_ref()
    }
}

/// The case the flags ask for, refused (status 2) when absent or when it
/// names another finding than `--finding`.
fn select<'m>(manifest: &'m Manifest, config: &Config) -> Result<&'m Case> {
    let file = &config.manifest;
    let wanted = config.case.as_deref().unwrap_or_default();
    let Some(case) = manifest.case(wanted) else {
        let ids: Vec<&str> = manifest.cases.iter().map(|c| c.id.as_str()).collect();
        let known = if ids.is_empty() {
            "it has no cases".to_owned()
        } else {
            format!("its cases are: {}", ids.join(", "))
        };
        return Err(Error::usage(format!(
            "{file} has no case {wanted:?}; {known}"
        )));
    };
    if let Some(finding) = &config.finding
        && *finding != case.finding
    {
        return Err(Error::usage(format!(
            "{file}: case \"{}\" proves {}, not {finding}; nothing was run",
            case.id, case.finding
        ))
        .with_hint("pick the case written for that finding, or drop --finding"));
    }
    Ok(case)
}

pub fn refuse_placeholders(case: &Case, file: &Input) -> Result<()> {
    let holes = case.placeholders();
    if holes.is_empty() {
        return Ok(());
    }
    Err(Error::rejected(format!(
        "{}: case \"{}\" still has {} placeholder(s) to fill: {}; nothing was run",
        file,
        case.id,
        holes.len(),
        holes.join(", ")
    ))
    .with_hint("replace each \"<fill:TYPE>\" with a real value of that type"))
}

/// Says on stderr why a run was not green, then what the server wrote
/// last on its stderr (escaped: the server's bytes are untrusted), then
/// (with `hint`) the remediation hint.
pub fn explain(result: &ProbeResult, server_stderr: Option<&StderrTail>, hint: bool) {
    let Some(reason) = result.reason else {
        return;
    };
    let detail = result.detail.as_deref().unwrap_or("");
    let lead = match result.result {
        Verdict::TransportError => "error: transport failure",
        _ => "red",
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "{PROGRAM}: {lead}: case {} {}: {detail}",
        result.case,
        reason.as_str()
    );
    if let Some(tail) = server_stderr.filter(|t| !t.lines.is_empty()) {
        let shown = tail.lines.len();
        let which = if tail.total > shown as u64 {
            format!("its last {shown} of {} lines", tail.total)
        } else {
            format!("{shown} line{}", if shown == 1 { "" } else { "s" })
        };
        let _ = writeln!(
            err,
            "  the server's stderr ({which}; --server-stderr shows all of it as it is written):"
        );
        for line in &tail.lines {
            let _ = writeln!(err, "    {}", escape::terminal(line));
        }
    }
    if hint && let Some(hint) = result.hint() {
        let _ = writeln!(err, "  hint: {hint}");
    }
}

fn note(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{PROGRAM}: note: {message}");
}
