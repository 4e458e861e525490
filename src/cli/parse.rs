//! The one parser of each setting: a flag's clap `value_parser` ([`Flag`]) and the
//! defaults file's value (`settings/given.rs`) go through the same function, as ripgrep
//! sends its config file through its one parser, so a value is accepted or refused alike
//! from either. A parser takes the text and returns the value, or the problem worded to
//! follow the flag (`--deadline …`) or the file's key (`config file F: key 'deadline': …`).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use crate::errors::UsageError;
use crate::labels::name_problem;
use crate::roles::MAX_TASKS;
use crate::verdict::retryable::RestartOn;

/// A setting's parser: the value, or what is wrong with the text.
pub(crate) type Parse<T> = fn(&str) -> Result<T, String>;

/// A parser as a flag's clap `value_parser`: its problem becomes one `error:` line that
/// starts with the flag (`--image "a b" is not a valid image name`).
#[derive(Clone, Copy)]
pub(crate) struct Flag<T>(pub Parse<T>);

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Flag<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg.and_then(clap::Arg::get_long).unwrap_or_default();
        let problem = match value.to_str() {
            Some(text) => match (self.0)(text) {
                Ok(parsed) => return Ok(parsed),
                Err(problem) => problem,
            },
            None => format!("{value:?} is not valid UTF-8"),
        };
        // clap keeps the error as the source; `lib.rs::clap_error` prints it as it is.
        let message = format!("--{flag} {problem}");
        let refuse = move |_: &str| Err::<T, _>(UsageError::new(message.clone()));
        refuse.parse_ref(cmd, arg, value)
    }
}

/// [`value_enum`] as a flag's clap `value_parser`, with the enum's values for help and
/// shell completion (clap's own `value_enum` parser would word a refusal its way).
pub(crate) struct Choice<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Choice<T> {
    pub(crate) fn new() -> Self {
        Choice(std::marker::PhantomData)
    }
}

impl<T> Clone for Choice<T> {
    fn clone(&self) -> Self {
        Choice::new()
    }
}

impl<T: clap::ValueEnum + Clone + Send + Sync + 'static> clap::builder::TypedValueParser
    for Choice<T>
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        Flag(value_enum::<T> as Parse<T>).parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            T::value_variants()
                .iter()
                .filter_map(clap::ValueEnum::to_possible_value),
        ))
    }
}

/// The longest duration a flag takes: 100 years. Longer is a typo, and a deadline that
/// far would overflow the clock's arithmetic.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `30s`, `2m`, `1h30m`, or a plain number of seconds, as kubectl accepts; at most
/// [`MAX_DURATION`].
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = match text.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => humantime::parse_duration(text).map_err(|e| {
            let e = e.to_string();
            if e.contains("too large") || e.contains("overflow") {
                "longer than 100 years".to_string()
            } else {
                format!("{e} (examples: 30s, 5m, 1h)")
            }
        })?,
    };
    if duration > MAX_DURATION {
        return Err("longer than 100 years".to_string());
    }
    Ok(duration)
}

/// A count that must be at least 1 (`--max-in-flight`).
pub(crate) fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a whole number, at least 1".to_string()),
    }
}

/// Any text that is not empty.
pub(crate) fn text(text: &str) -> Result<String, String> {
    match text {
        "" => Err("must not be empty".to_string()),
        _ => Ok(text.to_string()),
    }
}

/// A namespace: a DNS-1123 label (`labels::namespace_problem`).
pub(crate) fn namespace(text: &str) -> Result<String, String> {
    let text = self::text(text)?;
    match crate::labels::namespace_problem(&text) {
        Some(problem) => Err(format!("{text:?} {problem}")),
        None => Ok(text),
    }
}

/// A path, not empty.
pub(crate) fn path(text: &str) -> Result<PathBuf, String> {
    self::text(text).map(PathBuf::from)
}

/// A program this machine runs (`--python`): a name on PATH or a path, not blank.
pub(crate) fn program(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("must name a program, such as python3 or .venv/bin/python".to_string());
    }
    Ok(text.to_string())
}

/// `--notify`: an `http://` or `https://` URL, else a command line (`sh -c`).
pub(crate) fn notify(text: &str) -> Result<crate::metrics::notice::Target, String> {
    crate::metrics::notice::Target::parse(text)
}

/// A container image: no spaces.
pub(crate) fn image(text: &str) -> Result<String, String> {
    if text.trim().is_empty() || text.chars().any(char::is_whitespace) {
        return Err(format!("{text:?} is not a valid image name"));
    }
    Ok(text.to_string())
}

/// The name of an object the API server must accept (a PriorityClass, a scheduler, a
/// Volcano queue): a DNS-1123 subdomain.
pub(crate) fn name(text: &str) -> Result<String, String> {
    name_of_at_most(text, 253)
}

/// A Kueue LocalQueue's name, which is a label value too: at most 63 characters.
pub(crate) fn queue(text: &str) -> Result<String, String> {
    name_of_at_most(text, 63)
}

fn name_of_at_most(text: &str, max: usize) -> Result<String, String> {
    match name_problem(text, max) {
        Some(problem) => Err(format!("{text:?} {problem}")),
        None => Ok(text.to_string()),
    }
}

/// A port from 1 to 65535.
pub(crate) fn port(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .ok()
        .filter(|p| *p >= 1)
        .ok_or_else(|| format!("{text:?} is not a port number from 1 to 65535"))
}

/// A number of workers: at least 1, at most a run's tasks.
pub(crate) fn workers(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err("must be at least 1 (tf.distribute needs a worker)".to_string()),
        Ok(n) if n > MAX_TASKS => Err(format!(
            "{n} is too many: a run has at most {MAX_TASKS} tasks"
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a number of workers")),
    }
}

/// A number of restarts.
pub(crate) fn restarts(text: &str) -> Result<u32, String> {
    text.parse::<u32>()
        .map_err(|_| format!("{text:?} is not a number of restarts"))
}

/// `stall_factor`: a whole multiple, 0 for none.
pub(crate) fn stall_factor(text: &str) -> Result<u32, String> {
    text.parse::<u32>()
        .map_err(|_| format!("{text:?} is not a whole number (0: no derived stall bound)"))
}

/// `true` or `false`.
pub(crate) fn boolean(text: &str) -> Result<bool, String> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{text:?} is neither true nor false")),
    }
}

/// `--run-as-user`: a non-root user id (`plan::security::parse_uid`).
pub(crate) fn uid(text: &str) -> Result<i64, String> {
    crate::plan::security::parse_uid(text)
}

/// One of a `clap::ValueEnum`'s values, matched as clap matches them for the flag.
pub(crate) fn value_enum<T: clap::ValueEnum>(text: &str) -> Result<T, String> {
    T::from_str(text, false).map_err(|_| {
        let values: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        format!("{text:?} is not one of {}", values.join(", "))
    })
}

/// A duration (`30s`, `2m`, `1h30m`, or seconds), at most 100 years.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| format!("{text:?}: {e}"))
}

/// `--start-timeout`: a duration of at least 1s.
pub(crate) fn start_timeout(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        d if d.as_secs() >= 1 => Ok(d),
        _ => Err(format!("{text:?}: must be at least 1s")),
    }
}

/// `idle_timeout`: a duration of at least 2s (a watch asks the server to end it a
/// second or more before).
pub(crate) fn idle_timeout(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        d if d.as_secs() >= 2 => Ok(d),
        _ => Err(format!("{text:?}: must be at least 2s")),
    }
}

/// `--stall-after`: a duration of at least 1s.
pub(crate) fn stall_after(text: &str) -> Result<Duration, String> {
    start_timeout(text)
}

/// The most `activeDeadlineSeconds` the API server accepts (an int32).
pub(crate) const MAX_DEADLINE_SECS: u64 = i32::MAX as u64;

/// `--deadline`: from 1s to the API's limit.
pub(crate) fn deadline(text: &str) -> Result<Duration, String> {
    let d = duration(text)?;
    let shown = humantime::format_duration(d);
    match d.as_secs() {
        0 => Err(format!("{shown} is too short: at least 1s")),
        s if s > MAX_DEADLINE_SECS => Err(format!(
            "{shown} is too long: at most {MAX_DEADLINE_SECS} seconds (about 68 years), the API's limit"
        )),
        _ => Ok(d),
    }
}

/// `--restart-backoff`: at most [`MAX_BACKOFF`](crate::ops::restart::MAX_BACKOFF), as
/// its help says.
pub(crate) fn restart_backoff(text: &str) -> Result<Duration, String> {
    let max = crate::ops::restart::MAX_BACKOFF;
    match duration(text)? {
        d if d <= max => Ok(d),
        _ => Err(format!(
            "{text:?}: at most {}, the longest pause between restarts",
            humantime::format_duration(max)
        )),
    }
}

/// `--restart-on`'s list.
pub(crate) fn restart_on(text: &str) -> Result<RestartOn, String> {
    text.parse::<RestartOn>()
        .map_err(|e| e.to_string().replacen("--restart-on ", "", 1))
}

/// `--volume CLAIM[:PATH]`, checked (`inputs::output_volume`) and kept as written.
pub(crate) fn volume(text: &str) -> Result<String, String> {
    crate::inputs::output_volume(text).map(|_| text.to_string())
}

/// `--cpu`, `--ps-cpu`: a positive quantity of CPUs (`4`, `0.5`, `500m`), as written.
pub(crate) fn cpu(text: &str) -> Result<String, String> {
    match crate::plan::quantity::parse(text) {
        Some(v) if v > 0 => Ok(text.trim().to_string()),
        _ => Err(format!(
            "{text:?} is not a number of CPUs (e.g. 4, 0.5, 500m)"
        )),
    }
}

/// `--memory`, `--ps-memory`: a size of at least 1Mi (`16Gi`, `512Mi`), as written; a
/// bare number is bytes, which is never what was meant.
pub(crate) fn memory(text: &str) -> Result<String, String> {
    let text = text.trim();
    let mib = 1024 * 1024 * crate::plan::quantity::ONE;
    match crate::plan::quantity::parse(text) {
        Some(v) if v >= mib => Ok(text.to_string()),
        Some(v) if v > 0 && !text.ends_with(char::is_alphabetic) => Err(format!(
            "{text:?} is {text} bytes; give a unit: {text}Gi, {text}Mi"
        )),
        _ => Err(format!(
            "{text:?} is not a size of at least 1Mi (e.g. 16Gi, 512Mi)"
        )),
    }
}

/// `--shm-size`: a size as `--memory` takes it, or 0 for no `/dev/shm` of tf-spawner's.
pub(crate) fn shm_size(text: &str) -> Result<String, String> {
    match crate::plan::quantity::parse(text) {
        Some(0) => Ok("0".to_string()),
        _ => memory(text),
    }
}

/// `--gpus`, `--ps-gpus`: a number of GPUs (0 removes a template's).
pub(crate) fn gpus(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| format!("{text:?} is not a number of GPUs (0, 1, 2…)"))
}

/// `--gpu-resource`: an extended resource name, `DOMAIN/NAME` (`amd.com/gpu`, a MIG
/// profile `nvidia.com/mig-1g.10gb`), as the API server accepts one in a container's
/// limits: a DNS subdomain outside `kubernetes.io`, and a name of at most 63 letters,
/// digits, `-`, `_` and `.`.
pub(crate) fn gpu_resource(text: &str) -> Result<String, String> {
    let (domain, resource) = text.split_once('/').unwrap_or(("", ""));
    let resource_ok = !resource.is_empty()
        && resource.len() <= 63
        && resource
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && resource.starts_with(|c: char| c.is_ascii_alphanumeric())
        && resource.ends_with(|c: char| c.is_ascii_alphanumeric());
    let ok = name_problem(domain, 253).is_none()
        && domain.contains('.')
        && !domain.ends_with("kubernetes.io")
        && resource_ok;
    if !ok {
        return Err(format!(
            "{text:?} is not an extended resource name (DOMAIN/NAME: nvidia.com/gpu, amd.com/gpu, nvidia.com/mig-1g.10gb)"
        ));
    }
    Ok(text.to_string())
}

/// `--samples`, `--parallel`: a number of a sweep's runs, from 1 to the most a sweep has.
pub(crate) fn runs(text: &str) -> Result<u32, String> {
    let max = crate::plan::sweep::MAX_RUNS;
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u64>() {
        Ok(0) => Err("0: must be at least 1".to_string()),
        Ok(n) if n <= max => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        _ if digits => Err(format!("{text}: more than the {max} runs a sweep may have")),
        _ => Err(format!("{text:?} is not a whole number (at least 1)")),
    }
}

/// `--eta`: ASHA's reduction factor, a whole number from 2 to 100.
pub(crate) fn eta(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (2..=100).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?} is not a reduction factor: a whole number from 2 to 100 (3 keeps the best third at each rung)"
        )),
    }
}

/// `--min-epochs`: a whole number of epochs from 1 to 1,000,000.
pub(crate) fn min_epochs(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?} is not a number of epochs: a whole number, at least 1"
        )),
    }
}

/// `--objective`: `METRIC[:min|max]`.
pub(crate) fn objective(text: &str) -> Result<crate::metrics::early::Objective, String> {
    crate::metrics::early::Objective::parse(text)
}

/// `--seed`: a whole number below 2^64.
pub(crate) fn seed(text: &str) -> Result<u64, String> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u64>() {
        Ok(n) => Ok(n),
        Err(_) if digits => Err(format!("{text}: more than {} (a 64-bit seed)", u64::MAX)),
        Err(_) => Err(format!("{text:?} is not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_read_after_the_flag_and_after_the_key() {
        assert_eq!(
            image("a b").unwrap_err(),
            "\"a b\" is not a valid image name"
        );
        assert_eq!(
            port("0").unwrap_err(),
            "\"0\" is not a port number from 1 to 65535"
        );
        assert_eq!(port("65535"), Ok(65535));
        assert_eq!(
            workers("0").unwrap_err(),
            "must be at least 1 (tf.distribute needs a worker)"
        );
        assert!(workers("10001").unwrap_err().contains("at most 10000"));
        assert_eq!(
            value_enum::<crate::plan::podgroup::Gang>("slurm").unwrap_err(),
            "\"slurm\" is not one of volcano, coscheduling"
        );
        assert_eq!(
            boolean("yes").unwrap_err(),
            "\"yes\" is neither true nor false"
        );
        assert!(deadline("0").unwrap_err().contains("too short"));
        assert_eq!(
            start_timeout("0s").unwrap_err(),
            "\"0s\": must be at least 1s"
        );
    }

    #[test]
    fn resources_are_quantities_the_api_server_takes() {
        assert_eq!(cpu("500m"), Ok("500m".to_string()));
        assert_eq!(cpu("0.5"), Ok("0.5".to_string()));
        assert_eq!(
            cpu("0").unwrap_err(),
            "\"0\" is not a number of CPUs (e.g. 4, 0.5, 500m)"
        );
        assert!(cpu("four").is_err());
        assert_eq!(memory("16Gi"), Ok("16Gi".to_string()));
        assert_eq!(
            memory("16").unwrap_err(),
            "\"16\" is 16 bytes; give a unit: 16Gi, 16Mi"
        );
        assert!(memory("512Ki").unwrap_err().contains("at least 1Mi"));
        assert_eq!(shm_size("0"), Ok("0".to_string()));
        assert_eq!(shm_size("96Mi"), Ok("96Mi".to_string()));
        assert!(shm_size("lots").is_err());
        assert_eq!(gpus("2"), Ok(2));
        assert_eq!(
            gpus("-1").unwrap_err(),
            "\"-1\" is not a number of GPUs (0, 1, 2…)"
        );
        for ok in ["nvidia.com/gpu", "amd.com/gpu", "nvidia.com/mig-1g.10gb"] {
            assert_eq!(gpu_resource(ok), Ok(ok.to_string()));
        }
        for bad in [
            "gpu",
            "nvidia/gpu",
            "kubernetes.io/gpu",
            "nvidia.com/",
            "a.b/-x",
        ] {
            assert!(gpu_resource(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_stop_at_their_bounds() {
        let max = u64::MAX.to_string();
        assert_eq!(
            duration(&max).unwrap_err(),
            format!("{max:?}: longer than 100 years")
        );
        assert!(start_timeout(&max).is_err());
        assert_eq!(restart_backoff("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(
            restart_backoff("99y").unwrap_err(),
            "\"99y\": at most 5m, the longest pause between restarts"
        );
    }
}
