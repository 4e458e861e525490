//! What a sweep is, from its invocation alone: the parameters read and checked, how
//! their points are drawn, the script's arguments; the record a new sweep writes, with
//! the digests of what its runs are made of (the script, `--dir`'s files), which
//! `--resume` compares (`resume.rs`).

use std::io::Read;

use anyhow::Result;

use crate::errors::UsageError;
use crate::metrics::early::{Objective, Rule, Stopping};
use crate::output;
use crate::plan::SpawnRequest;
use crate::plan::sweep::{
    self as params, Digests, ExperimentRecord, MAX_RUNS, MAX_RUNS_WITHOUT_YES, Method, Param,
    Search,
};

/// The sweep's flags, as given.
pub(crate) struct Asked<'a> {
    /// `--resume NAME`, else `-t`'s.
    pub name: &'a str,
    pub params: &'a [String],
    pub samples: Option<u32>,
    pub seed: Option<u64>,
    /// `--method`, if given.
    pub search: Option<Search>,
    pub parallel: Option<u32>,
    /// The script's arguments after `--`, with their placeholders.
    pub args: &'a [String],
    /// `--yes`: more than 1,000 runs.
    pub yes: bool,
    /// `--objective`.
    pub objective: Option<Objective>,
    /// `--early-stop`, `--eta`, `--min-epochs`.
    pub stopping: Stopping,
}

/// A sweep as its invocation defines it, checked.
pub(crate) struct Definition {
    pub name: String,
    pub params: Vec<Param>,
    /// `--samples`: a random (or model-based) search; `None`: a grid.
    pub samples: Option<u32>,
    /// `--method`, or what `--samples` implies.
    pub search: Search,
    /// `--seed`, if given (a new random search draws one; `--resume` takes the record's).
    pub seed: Option<u64>,
    pub parallel: Option<u32>,
    pub args: Vec<String>,
    /// How many runs it makes.
    pub runs: u64,
    pub objective: Option<Objective>,
    /// `None`: `--early-stop off`.
    pub stopping: Option<Stopping>,
}

impl Definition {
    /// The parameters and how they are combined, checked: names, counts, placeholders.
    pub fn parse(asked: &Asked<'_>) -> Result<Definition> {
        let params: Vec<Param> = asked
            .params
            .iter()
            .map(|p| params::parse_param(p).map_err(|e| UsageError::new(format!("--param {e}"))))
            .collect::<Result<_, _>>()?;
        params::check_names(&params).map_err(UsageError::new)?;
        let search = search(asked)?;
        let method = method_of(search, asked.samples, 0);
        let total = params::count(&params, method).map_err(UsageError::new)?;
        if total > MAX_RUNS {
            return Err(UsageError::new(format!(
                "the sweep makes {total} runs, more than the {MAX_RUNS} a sweep may have: give fewer values, or sample with --samples K"
            ))
            .into());
        }
        if total > MAX_RUNS_WITHOUT_YES && !asked.yes {
            return Err(UsageError::new(format!(
                "the sweep makes {total} runs: add --yes to start that many, or give fewer values (or --samples K)"
            ))
            .into());
        }
        params::check_placeholders(&params, asked.args).map_err(UsageError::new)?;
        let stopping = Some(asked.stopping).filter(|s| s.rule != Rule::Off);
        if let (Some(s), None) = (stopping, &asked.objective) {
            return Err(UsageError::new(format!(
                "--early-stop {} compares the runs by the sweep's objective: add --objective METRIC (e.g. --objective val_loss, --objective accuracy:max), or --early-stop off",
                s.rule.name()
            ))
            .into());
        }
        Ok(Definition {
            name: asked.name.to_string(),
            params,
            samples: asked.samples,
            search,
            seed: asked.seed,
            parallel: asked.parallel,
            args: asked.args.to_vec(),
            runs: total,
            objective: asked.objective.clone(),
            stopping,
        })
    }

    /// The tag of the last run (the longest: every object name of every run is checked
    /// to fit it).
    pub fn last_tag(&self) -> String {
        let last = usize::try_from(self.runs.saturating_sub(1)).unwrap_or(usize::MAX);
        params::run_tag(&self.name, last)
    }

    /// The method, with `seed` for a random or model-based search.
    pub fn method(&self, seed: u64) -> Method {
        method_of(self.search, self.samples, seed)
    }

    /// A new experiment's record: its points drawn (a random search's seed said), the
    /// digests of what its runs are made of.
    pub fn record(&self, digests: Digests) -> ExperimentRecord {
        let method = self.method(self.seed.unwrap_or_else(rand::random));
        if let Method::Random { samples, seed } = method {
            let _ = output::print(&format!(
                "random search: {samples} samples, seed {seed} (--seed {seed} draws them again)\n"
            ));
        }
        if let Method::Tpe {
            samples,
            seed,
            startup,
        } = method
        {
            let _ = output::print(&format!(
                "tpe search: {samples} runs, the first {startup} random, the others each chosen from the runs so far; seed {seed} (--seed {seed} chooses them again)\n"
            ));
        }
        let points = params::expand(&self.params, method);
        ExperimentRecord {
            runs: ExperimentRecord::planned(&points, &self.name),
            name: self.name.clone(),
            params: self.params.clone(),
            method,
            parallel: self.parallel,
            args: self.args.clone(),
            digests: Some(digests),
            ended: Default::default(),
            objective: self.objective.clone(),
            early_stop: self.stopping,
            observed: Default::default(),
            values: Default::default(),
        }
    }
}

/// `--method` checked against `--samples` and `--objective`.
fn search(asked: &Asked<'_>) -> Result<Search> {
    let refused = match (asked.search, asked.samples) {
        (Some(Search::Grid), Some(k)) => format!(
            "--method grid takes every combination of the values: leave --samples {k} out, or use --method random or tpe"
        ),
        (Some(Search::Random), None) => {
            "--method random draws --samples K points: add --samples K (e.g. --samples 20)".into()
        }
        (Some(Search::Tpe), None) => {
            "--method tpe chooses --samples K points, its budget of runs: add --samples K (e.g. --samples 20)".into()
        }
        (Some(Search::Tpe), Some(_)) if asked.objective.is_none() => {
            "--method tpe chooses each next point by the runs' objective: add --objective METRIC (e.g. --objective val_loss, --objective accuracy:max), or use --method random".into()
        }
        (Some(search), _) => return Ok(search),
        (None, Some(_)) => return Ok(Search::Random),
        (None, None) => return Ok(Search::Grid),
    };
    Err(UsageError::new(refused).into())
}

/// The record's method of a search, `seed` for the random points.
fn method_of(search: Search, samples: Option<u32>, seed: u64) -> Method {
    match (search, samples) {
        (Search::Tpe, Some(samples)) => Method::Tpe {
            samples,
            seed,
            startup: crate::metrics::tpe::startup(samples),
        },
        (_, Some(samples)) => Method::Random { samples, seed },
        (_, None) => Method::Grid,
    }
}

/// The digests of the request's script and `--dir` files.
pub(crate) fn digests(request: &SpawnRequest) -> Result<Digests> {
    let dir = match &request.bundle {
        Some(bundle) => Some(files_digest(&bundle.archive)?),
        None => None,
    };
    Ok(Digests {
        script: sha256(&[&request.script]),
        dir,
    })
}

/// `sha256:HEX` over each file of a gzip'd tar: its path and its bytes, in the
/// archive's order (the packer's, sorted), not its times or modes: a file touched but
/// not changed keeps the digest.
fn files_digest(archive: &[u8]) -> Result<String> {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    for entry in tar.entries()? {
        let mut entry = entry?;
        let path = entry.path_bytes().into_owned();
        context.update(&(path.len() as u64).to_le_bytes());
        context.update(&path);
        context.update(&entry.header().size()?.to_le_bytes());
        let mut buffer = [0u8; 64 * 1024];
        loop {
            let n = entry.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            context.update(&buffer[..n]);
        }
    }
    Ok(hex(context.finish().as_ref()))
}

fn sha256(parts: &[&[u8]]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        context.update(part);
    }
    hex(context.finish().as_ref())
}

fn hex(digest: &[u8]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(files: &[(&str, &[u8], u64)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        for (path, bytes, mtime) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mtime(*mtime);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, path, *bytes).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn the_files_digest_follows_paths_and_bytes_not_times() {
        let one = files_digest(&archive(&[("a.py", b"x = 1\n", 1)])).unwrap();
        let touched = files_digest(&archive(&[("a.py", b"x = 1\n", 99)])).unwrap();
        let edited = files_digest(&archive(&[("a.py", b"x = 2\n", 1)])).unwrap();
        let renamed = files_digest(&archive(&[("b.py", b"x = 1\n", 1)])).unwrap();
        // A byte moved between the path and the content is another digest.
        let moved = files_digest(&archive(&[("a.pyx", b" = 1\n", 1)])).unwrap();
        assert_eq!(one, touched);
        for other in [&edited, &renamed, &moved] {
            assert_ne!(&one, other);
        }
        assert!(one.starts_with("sha256:") && one.len() == 7 + 64, "{one}");
    }
}
