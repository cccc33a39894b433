//! AWS credentials and region for the SWF poller (feature `swf-poller`), resolved as the AWS SDKs
//! resolve static credentials: the environment first (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; `AWS_REGION`, `AWS_DEFAULT_REGION`), then the
//! profile (`--profile`, else `AWS_PROFILE`, else `default`) of the shared credentials file
//! (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`, sections `[name]`) and of the
//! shared config file (`AWS_CONFIG_FILE`, default `~/.aws/config`, sections `[profile name]` and
//! `[default]`). For one profile, a key in the credentials file wins over the config file's.
//!
//! Only static keys are read: a profile that gets its credentials another way (`role_arn`,
//! `sso_session`, `credential_process`, ...) is an error that says so.
//!
//! Why a parser of our own: the SDKs' parser lives in `aws-config`, which (1.x) always depends
//! on `aws-sdk-sts` and the Smithy client runtime, the stack the poller avoids by signing its
//! eight JSON calls with `aws-sigv4` alone (docs/adapters.md); the general INI crates neither
//! follow the AWS rules (comments, `[profile name]`, indented sub-properties) nor report lines.
//! The format is small: this follows the rules of the SDKs' shared-config file format that
//! matter for reading keys, and every error names the file and the line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::swf_poller::{AwsCredentials, PollerError};

/// The keys of a profile that hold credentials another way than static keys (not supported).
const OTHER_SOURCES: &[&str] =
    &["role_arn", "sso_session", "sso_start_url", "credential_process", "web_identity_token_file", "source_profile"];

/// A profile's properties, each with the line it is on.
#[derive(Debug, Default, Clone)]
struct Section {
    /// The line of the (first) section header.
    line: usize,
    properties: HashMap<String, (String, usize)>,
}

/// One parsed file: its profiles by name.
#[derive(Debug, Default)]
struct ProfileFile {
    path: PathBuf,
    profiles: HashMap<String, Section>,
}

/// Which file is parsed: sections are named `[name]` in the credentials file and
/// `[profile name]` (or `[default]`) in the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Credentials,
    Config,
}

/// A file error, `FILE:LINE: message` (line 0: the file as a whole).
fn file_error(path: &Path, line: usize, message: impl std::fmt::Display) -> PollerError {
    let at = if line == 0 { path.display().to_string() } else { format!("{}:{line}", path.display()) };
    PollerError::Profile(format!("{at}: {message}"))
}

/// Drops a comment that starts with `#` or `;` after whitespace (the SDKs' rule for values).
fn strip_comment(value: &str) -> &str {
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b'#' || b == b';') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return value[..i].trim_end();
        }
    }
    value
}

impl ProfileFile {
    /// Reads and parses `path`; a file that does not exist is empty, as for the SDKs.
    fn read(path: &Path, kind: Kind) -> Result<ProfileFile, PollerError> {
        match std::fs::read_to_string(path) {
            Ok(text) => ProfileFile::parse(path, &text, kind),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok(ProfileFile { path: path.to_owned(), profiles: HashMap::new() })
            }
            Err(e) => Err(file_error(path, 0, format!("cannot read: {e}"))),
        }
    }

    fn parse(path: &Path, text: &str, kind: Kind) -> Result<ProfileFile, PollerError> {
        let mut file = ProfileFile { path: path.to_owned(), profiles: HashMap::new() };
        // The profile the following properties belong to; `Some(None)`: a section that is not
        // a profile (`[sso-session x]`, `[services x]`, or `[profile x]` in the credentials
        // file), whose properties are skipped.
        let mut current: Option<Option<String>> = None;
        // Whether the last property had an empty value: indented lines after it are its
        // sub-properties (`s3 =` then `  max_concurrent_requests = 10`).
        let mut in_sub_properties = false;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            let indented = raw.starts_with([' ', '\t']);
            if trimmed.starts_with('[') {
                let Some(end) = trimmed.find(']') else {
                    return Err(file_error(path, line_no, "a section header is missing its closing `]`"));
                };
                let rest = trimmed[end + 1..].trim();
                if !(rest.is_empty() || rest.starts_with('#') || rest.starts_with(';')) {
                    return Err(file_error(
                        path,
                        line_no,
                        format!("unexpected text after the section header: {rest:?}"),
                    ));
                }
                let inner = trimmed[1..end].trim();
                if inner.is_empty() {
                    return Err(file_error(path, line_no, "a section header has no name"));
                }
                let name = match kind {
                    Kind::Credentials => (!inner.starts_with("profile ")).then(|| inner.to_owned()),
                    Kind::Config if inner == "default" => Some("default".to_owned()),
                    Kind::Config => {
                        inner.strip_prefix("profile ").map(|n| n.trim().to_owned()).filter(|n| !n.is_empty())
                    }
                };
                if let Some(name) = &name {
                    file.profiles
                        .entry(name.clone())
                        .or_insert_with(|| Section { line: line_no, ..Section::default() });
                }
                current = Some(name);
                in_sub_properties = false;
                continue;
            }
            let Some(section) = &current else {
                return Err(file_error(path, line_no, "a property before any `[profile]` section"));
            };
            if indented && in_sub_properties {
                continue;
            }
            let Some((key, value)) = trimmed.split_once('=') else {
                if indented {
                    // A continuation of the previous value: not one the poller reads.
                    continue;
                }
                return Err(file_error(path, line_no, format!("expected `key = value`, found {trimmed:?}")));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(file_error(path, line_no, "a property has no name before `=`"));
            }
            let value = strip_comment(value.trim());
            in_sub_properties = value.is_empty();
            if let Some(name) = section
                && let Some(profile) = file.profiles.get_mut(name)
            {
                profile.properties.insert(key.to_ascii_lowercase(), (value.to_owned(), line_no));
            }
        }
        Ok(file)
    }

    fn get(&self, profile: &str, key: &str) -> Option<(&str, usize)> {
        let (value, line) = self.profiles.get(profile)?.properties.get(key)?;
        Some((value.as_str(), *line)).filter(|(v, _)| !v.is_empty())
    }
}

/// Credentials and region resolved for the poller.
#[derive(Debug, Clone)]
pub struct AwsSettings {
    /// The credentials to sign with.
    pub credentials: AwsCredentials,
    /// The region from the environment or the profile, if any.
    pub region: Option<String>,
    /// Where the credentials came from, for the log (`environment`, or `profile NAME in FILE`).
    pub source: String,
}

impl AwsSettings {
    /// Resolves from the process environment and the shared files; `profile` (the CLI's
    /// `--profile`) wins over `AWS_PROFILE`.
    pub fn load(profile: Option<&str>) -> Result<AwsSettings, PollerError> {
        AwsSettings::load_with(profile, &|name| std::env::var(name).ok())
    }

    /// [`AwsSettings::load`] with `env` in place of the process environment (tests).
    pub fn load_with(profile: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<AwsSettings, PollerError> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        let explicit = profile.map(str::to_owned).or_else(|| var("AWS_PROFILE"));
        let name = explicit.clone().unwrap_or_else(|| "default".to_owned());
        let home = var("HOME").or_else(|| var("USERPROFILE")).map(PathBuf::from);
        let path_of = |variable: &str, file: &str| {
            var(variable).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".aws").join(file)))
        };
        let files = [
            path_of("AWS_SHARED_CREDENTIALS_FILE", "credentials").map(|p| (p, Kind::Credentials)),
            path_of("AWS_CONFIG_FILE", "config").map(|p| (p, Kind::Config)),
        ];
        let mut parsed = Vec::new();
        for (path, kind) in files.into_iter().flatten() {
            parsed.push(ProfileFile::read(&path, kind)?);
        }
        // A key of the profile: the credentials file first, then the config file.
        let lookup = |key: &str| parsed.iter().find_map(|f| f.get(&name, key).map(|(v, line)| (v, line, &f.path)));
        let region = var("AWS_REGION")
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .or_else(|| lookup("region").map(|(v, ..)| v.to_owned()));

        if let (Some(access_key_id), Some(secret_access_key)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"))
        {
            let credentials =
                AwsCredentials { access_key_id, secret_access_key, session_token: var("AWS_SESSION_TOKEN") };
            return Ok(AwsSettings { credentials, region, source: "environment".into() });
        }
        let holders: Vec<&ProfileFile> = parsed.iter().filter(|f| f.profiles.contains_key(&name)).collect();
        let Some(first) = holders.first() else {
            let searched: Vec<String> = parsed.iter().map(|f| f.path.display().to_string()).collect();
            return Err(match explicit {
                // A profile asked for by name must exist.
                Some(_) => PollerError::Profile(format!(
                    "the AWS profile {name:?} is in none of {} (and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set)",
                    if searched.is_empty() {
                        "the shared files (HOME is not set)".to_owned()
                    } else {
                        searched.join(", ")
                    }
                )),
                None => PollerError::MissingCredentials,
            });
        };
        let section_at =
            |f: &ProfileFile| format!("{}:{}", f.path.display(), f.profiles.get(&name).map_or(0, |s| s.line));
        let missing = |key: &str| {
            let at: Vec<String> = holders.iter().map(|f| section_at(f)).collect();
            let other = OTHER_SOURCES.iter().find_map(|k| lookup(k).map(|(_, line, path)| (k, line, path)));
            let hint = match other {
                Some((k, line, path)) => format!(
                    "; it sets `{k}` ({}:{line}), which wfc does not resolve: export static credentials, e.g. with `aws configure export-credentials --profile {name} --format env`",
                    path.display()
                ),
                None => String::new(),
            };
            PollerError::Profile(format!("the AWS profile {name:?} ({}) has no `{key}`{hint}", at.join(", ")))
        };
        let (access_key_id, _, _) = lookup("aws_access_key_id").ok_or_else(|| missing("aws_access_key_id"))?;
        let (secret_access_key, _, _) =
            lookup("aws_secret_access_key").ok_or_else(|| missing("aws_secret_access_key"))?;
        let credentials = AwsCredentials {
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: lookup("aws_session_token").map(|(v, ..)| v.to_owned()),
        };
        Ok(AwsSettings { credentials, region, source: format!("profile {name:?} ({})", section_at(first)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Files {
        dir: PathBuf,
    }

    impl Files {
        fn new(tag: &str, credentials: Option<&str>, config: Option<&str>) -> Files {
            let dir = std::env::temp_dir().join(format!("wfc-aws-profile-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            if let Some(text) = credentials {
                std::fs::write(dir.join("credentials"), text).unwrap();
            }
            if let Some(text) = config {
                std::fs::write(dir.join("config"), text).unwrap();
            }
            Files { dir }
        }

        fn load(&self, profile: Option<&str>, env: &[(&str, &str)]) -> Result<AwsSettings, PollerError> {
            let mut vars: HashMap<String, String> =
                env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            vars.entry("AWS_SHARED_CREDENTIALS_FILE".into())
                .or_insert_with(|| self.dir.join("credentials").display().to_string());
            vars.entry("AWS_CONFIG_FILE".into()).or_insert_with(|| self.dir.join("config").display().to_string());
            AwsSettings::load_with(profile, &|name| vars.get(name).cloned())
        }

        fn path(&self, file: &str) -> String {
            self.dir.join(file).display().to_string()
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn error(r: Result<AwsSettings, PollerError>) -> String {
        r.expect_err("expected an error").to_string()
    }

    const CREDENTIALS: &str = "\
# a comment
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = secretdefault ; an inline comment

[work]
aws_access_key_id=AKIDWORK
aws_secret_access_key = secret#with-hash
aws_session_token = token-work
[profile ignored]
aws_access_key_id = NOT-A-PROFILE-HERE
";

    const CONFIG: &str = "\
[default]
region = eu-west-1
[profile work]
region = us-east-2   # a comment
s3 =
  max_concurrent_requests = 10
[profile config-only]
aws_access_key_id = AKIDCONFIG
aws_secret_access_key = secretconfig
region = ap-south-1
[sso-session corp]
sso_region = us-east-1
[profile via-role]
role_arn = arn:aws:iam::123456789012:role/x
source_profile = default
";

    #[test]
    fn the_default_profile_of_both_files() {
        let f = Files::new("default", Some(CREDENTIALS), Some(CONFIG));
        let s = f.load(None, &[]).unwrap();
        assert_eq!(s.credentials.access_key_id, "AKIDDEFAULT");
        assert_eq!(s.credentials.secret_access_key, "secretdefault");
        assert_eq!(s.credentials.session_token, None);
        assert_eq!(s.region.as_deref(), Some("eu-west-1"));
        assert_eq!(s.source, format!("profile \"default\" ({}:2)", f.path("credentials")));
    }

    #[test]
    fn a_named_profile_from_aws_profile_or_the_argument() {
        let f = Files::new("named", Some(CREDENTIALS), Some(CONFIG));
        for s in
            [f.load(None, &[("AWS_PROFILE", "work")]).unwrap(), f.load(Some("work"), &[("AWS_PROFILE", "x")]).unwrap()]
        {
            assert_eq!(s.credentials.access_key_id, "AKIDWORK");
            // `#` not after whitespace is part of the value.
            assert_eq!(s.credentials.secret_access_key, "secret#with-hash");
            assert_eq!(s.credentials.session_token.as_deref(), Some("token-work"));
            assert_eq!(s.region.as_deref(), Some("us-east-2"));
        }
        // Keys in the config file's `[profile name]` section.
        let s = f.load(Some("config-only"), &[]).unwrap();
        assert_eq!(s.credentials.access_key_id, "AKIDCONFIG");
        assert_eq!(s.region.as_deref(), Some("ap-south-1"));
    }

    #[test]
    fn the_environment_wins_over_the_files() {
        let f = Files::new("env", Some(CREDENTIALS), Some(CONFIG));
        let env = [
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "secretenv"),
            ("AWS_SESSION_TOKEN", "tokenenv"),
            ("AWS_REGION", "sa-east-1"),
        ];
        let s = f.load(Some("work"), &env).unwrap();
        assert_eq!(s.credentials.access_key_id, "AKIDENV");
        assert_eq!(s.credentials.session_token.as_deref(), Some("tokenenv"));
        assert_eq!(s.region.as_deref(), Some("sa-east-1"));
        assert_eq!(s.source, "environment");
        // Only one of the two keys in the environment: the profile is used, and its region
        // unless AWS_DEFAULT_REGION says otherwise.
        let s = f.load(None, &[("AWS_ACCESS_KEY_ID", "AKIDENV"), ("AWS_DEFAULT_REGION", "us-west-1")]).unwrap();
        assert_eq!(s.credentials.access_key_id, "AKIDDEFAULT");
        assert_eq!(s.region.as_deref(), Some("us-west-1"));
    }

    #[test]
    fn missing_files_profiles_and_keys_are_clear_errors() {
        let none = Files::new("none", None, None);
        let e = error(none.load(None, &[]));
        assert!(e.contains("no AWS credentials"), "{e}");
        let e = error(none.load(Some("work"), &[]));
        assert!(e.contains("the AWS profile \"work\" is in none of") && e.contains(&none.path("credentials")), "{e}");

        let f = Files::new("missing", Some("[default]\naws_access_key_id = A\n"), Some(CONFIG));
        let e = error(f.load(None, &[]));
        assert_eq!(
            e,
            format!(
                "the AWS profile \"default\" ({}:1, {}:1) has no `aws_secret_access_key`",
                f.path("credentials"),
                f.path("config")
            )
        );
        let e = error(f.load(Some("via-role"), &[]));
        assert!(e.contains("has no `aws_access_key_id`; it sets `role_arn`"), "{e}");
        assert!(e.contains(&format!("{}:14", f.path("config"))), "{e}");
        let e = error(f.load(Some("nope"), &[]));
        assert!(e.contains("the AWS profile \"nope\" is in none of"), "{e}");
    }

    #[test]
    fn bad_files_name_the_file_and_line() {
        let cases = [
            ("aws_access_key_id = A\n", 1, "a property before any `[profile]` section"),
            ("[default\n", 1, "a section header is missing its closing `]`"),
            ("[default]\n\n[]\n", 3, "a section header has no name"),
            ("[default] x\n", 1, "unexpected text after the section header"),
            ("[default]\naws_access_key_id A\n", 2, "expected `key = value`"),
            ("[default]\n = A\n", 2, "a property has no name before `=`"),
        ];
        for (text, line, message) in cases {
            let f = Files::new("bad", Some(text), None);
            let e = error(f.load(None, &[]));
            assert!(e.contains(&format!("{}:{line}: {message}", f.path("credentials"))), "{text:?}: {e}");
        }
        // A directory where the file should be: unreadable, named.
        let f = Files::new("dir", None, None);
        std::fs::create_dir_all(f.dir.join("config")).unwrap();
        let e = error(f.load(None, &[]));
        assert!(e.contains(&format!("{}: cannot read", f.path("config"))), "{e}");
    }

    #[test]
    fn default_paths_are_under_home() {
        let f = Files::new("home", None, None);
        std::fs::create_dir_all(f.dir.join(".aws")).unwrap();
        std::fs::write(f.dir.join(".aws/credentials"), "[default]\naws_access_key_id=H\naws_secret_access_key=S\n")
            .unwrap();
        let home = f.dir.display().to_string();
        let s = AwsSettings::load_with(None, &|name| (name == "HOME").then(|| home.clone())).unwrap();
        assert_eq!(s.credentials.access_key_id, "H");
        assert!(s.source.contains(".aws/credentials:1"), "{}", s.source);
    }
}
