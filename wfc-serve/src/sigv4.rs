//! SigV4 verification: with credentials configured (`wfc serve --credentials FILE`), every
//! request must carry a valid AWS Signature Version 4 signature for one of them, as AWS
//! requires; the AWS CLI and SDKs sign every request already. The signature is in the
//! `Authorization` header, or in the query string of a presigned request (`X-Amz-Algorithm`,
//! `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`,
//! `X-Amz-Signature`; refused once `X-Amz-Date` + `X-Amz-Expires` has passed). Temporary
//! credentials (a `token=` in the credentials file, with an optional `expires=`) require their
//! session token (`X-Amz-Security-Token`, header or query); past their expiry they are refused
//! with AWS's `ExpiredTokenException`.
//!
//! The expected signature is computed by the `aws-sigv4` crate (the signer of aws-sdk-rust)
//! over the request as received, restricted to the headers the client says it signed, so the
//! canonical request, the string to sign and the key derivation are the SDK's, not ours. The
//! two signatures are compared in constant time (`subtle`).
//!
//! Refusals are AWS's: `UnrecognizedClientException` for an unsigned request or an unknown
//! access key, `IncompleteSignatureException` for a malformed `Authorization` header,
//! `InvalidSignatureException` for a wrong signature, a date more than 15 minutes from the
//! server's clock, or a credential scope of another date, region or service.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, Method, Uri};
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// The signing name of Step Functions (the service in the credential scope).
pub const SERVICE: &str = "states";

/// How far a request's `X-Amz-Date` may be from the server's clock (AWS: 15 minutes).
pub const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// The access keys a server accepts: access key id → its secret (and session token).
#[derive(Clone, Default)]
pub struct Credentials {
    keys: HashMap<String, Key>,
}

/// One access key.
#[derive(Clone, PartialEq, Eq)]
struct Key {
    secret: String,
    /// Temporary credentials: the session token requests must carry.
    token: Option<String>,
    /// When temporary credentials stop working.
    expires: Option<SystemTime>,
}

/// The longest `X-Amz-Expires` of a presigned request (AWS: 7 days).
const MAX_EXPIRES: u64 = 7 * 24 * 3600;

/// The query parameters of a presigned request that carry its signature (not signed themselves,
/// except the token, which the signer adds back).
const QUERY_AUTH: &[&str] = &[
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
    "X-Amz-Security-Token",
];

impl std::fmt::Debug for Credentials {
    /// Never prints a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ids: Vec<&String> = self.keys.keys().collect();
        ids.sort();
        f.debug_struct("Credentials").field("access_key_ids", &ids).finish()
    }
}

impl Credentials {
    /// Parses `ACCESS_KEY_ID:SECRET_ACCESS_KEY` entries, one a line (or separated by commas);
    /// blank lines and lines starting with `#` are skipped. Temporary credentials add
    /// ` token=SESSION_TOKEN` and optionally ` expires=RFC3339-TIME` after the secret. `origin`
    /// names the source in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Credentials, String> {
        let mut keys = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            for entry in line.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let at = format!("{origin}, line {}", index + 1);
                // The attributes are the trailing `name=value` words (lowercase names).
                let words: Vec<&str> = entry.split_whitespace().collect();
                let is_attribute = |w: &&str| {
                    w.split_once('=').is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase()))
                };
                let split = words.iter().position(is_attribute).unwrap_or(words.len());
                let (pair, attributes) = (words[..split].join(""), words[split..].join(" "));
                let Some((id, secret)) = pair.split_once(':').filter(|_| !pair.is_empty()) else {
                    return Err(format!("{at}: expected ACCESS_KEY_ID:SECRET_ACCESS_KEY"));
                };
                let (id, secret) = (id.trim(), secret.trim());
                let (mut token, mut expires) = (None, None);
                for attribute in attributes.split_whitespace() {
                    match attribute.split_once('=') {
                        Some(("token", t)) if !t.is_empty() => token = Some(t.to_owned()),
                        Some(("expires", e)) => {
                            let time: jiff::Timestamp = e.parse().map_err(|err| {
                                format!("{at}: expires={e} is not an RFC 3339 time (2026-01-01T00:00:00Z): {err}")
                            })?;
                            expires = Some(SystemTime::from(time));
                        }
                        _ => {
                            return Err(format!(
                                "{at}: unknown '{attribute}' after the secret (token=SESSION_TOKEN, expires=TIME)"
                            ));
                        }
                    }
                }
                if expires.is_some() && token.is_none() {
                    return Err(format!("{at}: expires= is for temporary credentials, which need a token="));
                }
                if id.is_empty() || secret.is_empty() {
                    return Err(format!("{at}: the access key id and the secret must not be empty"));
                }
                if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(format!("{at}: an access key id is letters and digits only"));
                }
                if keys.insert(id.to_owned(), Key { secret: secret.to_owned(), token, expires }).is_some() {
                    return Err(format!("{at}: access key id {id} is given twice"));
                }
            }
        }
        if keys.is_empty() {
            return Err(format!("{origin}: no credentials (expected ACCESS_KEY_ID:SECRET_ACCESS_KEY lines)"));
        }
        Ok(Credentials { keys })
    }

    /// Reads [`Credentials::parse`]'s format from a file.
    pub fn load(path: &Path) -> Result<Credentials, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Credentials::parse(&text, &path.display().to_string())
    }

    /// How many access keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Checks the signatures of requests to a server of one region.
#[derive(Debug, Clone)]
pub struct Verifier {
    credentials: Credentials,
    region: String,
}

/// The parts of an `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
/// Signature=...` header, or of a presigned request's query.
struct Authorization<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    terminator: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

/// A presigned request's query parameters: the signature's, and the others (as sent).
struct Presigned {
    auth: HashMap<String, String>,
    /// The query without the signature's parameters, still encoded.
    rest: String,
}

impl Presigned {
    /// `None` when the query has no `X-Amz-Algorithm` (not presigned).
    fn parse(uri: &Uri) -> Option<Presigned> {
        let query = uri.query()?;
        let mut auth = HashMap::new();
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let decoded: Vec<(String, String)> =
                form_urlencoded::parse(pair.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
            match decoded.into_iter().next() {
                Some((k, v)) if QUERY_AUTH.contains(&k.as_str()) => {
                    auth.insert(k, v);
                }
                _ => rest.push(pair),
            }
        }
        auth.contains_key("X-Amz-Algorithm").then(|| Presigned { auth, rest: rest.join("&") })
    }

    fn get(&self, name: &str) -> Result<&str, ApiError> {
        self.auth
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| incomplete(format!("A presigned request requires the '{name}' query parameter")))
    }
}

fn expired_token() -> ApiError {
    ApiError::client("ExpiredTokenException", "The security token included in the request is expired")
}

fn invalid_token() -> ApiError {
    unrecognized("The security token included in the request is invalid.")
}

fn unrecognized(message: impl Into<String>) -> ApiError {
    ApiError::client("UnrecognizedClientException", message)
}

fn incomplete(message: impl Into<String>) -> ApiError {
    ApiError::client("IncompleteSignatureException", message)
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::client("InvalidSignatureException", message)
}

fn parse_authorization(value: &str) -> Result<Authorization<'_>, ApiError> {
    let Some(rest) = value.strip_prefix(ALGORITHM).filter(|r| r.starts_with(' ')) else {
        let algorithm = value.split_whitespace().next().unwrap_or("");
        return Err(incomplete(format!(
            "Unsupported signing algorithm '{algorithm}' in the Authorization header: this server verifies {ALGORITHM} (SigV4) only"
        )));
    };
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let part = part.trim();
        let Some((key, v)) = part.split_once('=') else {
            return Err(incomplete(format!("Authorization header parameter '{part}' is not KEY=VALUE")));
        };
        let slot = match key {
            "Credential" => &mut credential,
            "SignedHeaders" => &mut signed,
            "Signature" => &mut signature,
            _ => return Err(incomplete(format!("Unknown Authorization header parameter '{key}'"))),
        };
        if slot.replace(v).is_some() {
            return Err(incomplete(format!("Authorization header parameter '{key}' is given twice")));
        }
    }
    let missing = |name: &str| incomplete(format!("Authorization header requires '{name}' parameter"));
    let credential = credential.ok_or_else(|| missing("Credential"))?;
    let signed = signed.ok_or_else(|| missing("SignedHeaders"))?;
    let signature = signature.ok_or_else(|| missing("Signature"))?;
    authorization(credential, signed, signature)
}

fn authorization<'a>(credential: &'a str, signed: &'a str, signature: &'a str) -> Result<Authorization<'a>, ApiError> {
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key, date, region, service, terminator] = scope[..] else {
        return Err(incomplete(format!(
            "Credential '{credential}' is not ACCESS_KEY_ID/YYYYMMDD/REGION/SERVICE/aws4_request"
        )));
    };
    Ok(Authorization {
        access_key,
        date,
        region,
        service,
        terminator,
        signed_headers: signed.split(';').collect(),
        signature,
    })
}

/// `X-Amz-Date` (`YYYYMMDDTHHMMSSZ`) as a time.
fn parse_amz_date(value: &str) -> Option<SystemTime> {
    let civil = jiff::civil::DateTime::strptime("%Y%m%dT%H%M%SZ", value).ok()?;
    let ts = civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some(SystemTime::from(ts))
}

fn amz_date(time: SystemTime) -> String {
    jiff::Timestamp::try_from(time).map(|t| t.strftime("%Y%m%dT%H%M%SZ").to_string()).unwrap_or_default()
}

impl Verifier {
    /// A verifier for `credentials`, answering for `region` (the credential scope must name it).
    pub fn new(credentials: Credentials, region: impl Into<String>) -> Verifier {
        Verifier { credentials, region: region.into() }
    }

    /// Checks one request's signature at time `now`; `body` is the whole body as received.
    pub fn verify(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), ApiError> {
        let presigned = Presigned::parse(uri);
        let header = headers.get(http::header::AUTHORIZATION);
        let (auth, date_value, token, expires) = match (header, &presigned) {
            (Some(_), Some(_)) => {
                return Err(incomplete(
                    "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified",
                ));
            }
            (None, None) => {
                return Err(unrecognized(
                    "The request is not signed (no Authorization header nor X-Amz-Algorithm query parameter): this server requires AWS SigV4 signed requests",
                ));
            }
            (Some(value), None) => {
                let value = value.to_str().map_err(|_| incomplete("The Authorization header is not ASCII"))?;
                let Some(date_value) = headers.get("x-amz-date").and_then(|v| v.to_str().ok()) else {
                    let auth = parse_authorization(value)?;
                    self.key(auth.access_key, now)?;
                    return Err(incomplete("Authorization header requires existence of a 'X-Amz-Date' header."));
                };
                let token = headers.get("x-amz-security-token").and_then(|v| v.to_str().ok());
                (parse_authorization(value)?, date_value, token, None)
            }
            (None, Some(p)) => {
                let algorithm = p.get("X-Amz-Algorithm")?;
                if algorithm != ALGORITHM {
                    return Err(incomplete(format!(
                        "Unsupported signing algorithm '{algorithm}' in X-Amz-Algorithm: this server verifies {ALGORITHM} (SigV4) only"
                    )));
                }
                let auth = authorization(
                    p.get("X-Amz-Credential")?,
                    p.get("X-Amz-SignedHeaders")?,
                    p.get("X-Amz-Signature")?,
                )?;
                let expires = p.get("X-Amz-Expires")?;
                let seconds =
                    expires.parse::<u64>().ok().filter(|s| (1..=MAX_EXPIRES).contains(s)).ok_or_else(|| {
                        incomplete(format!(
                            "X-Amz-Expires '{expires}' must be a number of seconds from 1 to {MAX_EXPIRES}"
                        ))
                    })?;
                let token = p.auth.get("X-Amz-Security-Token").map(String::as_str);
                (auth, p.get("X-Amz-Date")?, token, Some(seconds))
            }
        };
        let key = self.key(auth.access_key, now)?;
        // The session token of temporary credentials, and none for the others.
        let token_matches = match (&key.token, token) {
            (Some(expected), Some(given)) => bool::from(expected.as_bytes().ct_eq(given.as_bytes())),
            (None, None) => true,
            _ => false,
        };
        if !token_matches {
            return Err(invalid_token());
        }
        let Some(date) = parse_amz_date(date_value) else {
            return Err(incomplete(format!("X-Amz-Date '{date_value}' is not YYYYMMDDTHHMMSSZ")));
        };
        match expires {
            // A presigned request works from its date until its expiry.
            Some(seconds) => {
                let until = date + Duration::from_secs(seconds);
                if now > until {
                    return Err(invalid(format!(
                        "Signature expired: the presigned request expired at {} (X-Amz-Date {date_value} + X-Amz-Expires {seconds} s); it is now {}",
                        amz_date(until),
                        amz_date(now)
                    )));
                }
            }
            None if now.duration_since(date).is_ok_and(|late| late > MAX_SKEW) => {
                return Err(invalid(format!(
                    "Signature expired: {date_value} is now earlier than {} ({} - 15 min.)",
                    amz_date(now - MAX_SKEW),
                    amz_date(now)
                )));
            }
            None => {}
        }
        if date.duration_since(now).is_ok_and(|early| early > MAX_SKEW) {
            return Err(invalid(format!(
                "Signature not yet current: {date_value} is still later than {} ({} + 15 min.)",
                amz_date(now + MAX_SKEW),
                amz_date(now)
            )));
        }
        if auth.date != &date_value[..8] {
            return Err(invalid(format!(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{}', from '{date_value}'.",
                auth.date,
                &date_value[..8]
            )));
        }
        if auth.region != self.region {
            return Err(invalid(format!(
                "Credential should be scoped to a valid region: '{}' is not this server's region '{}'.",
                auth.region, self.region
            )));
        }
        if auth.service != SERVICE {
            return Err(invalid(format!("Credential should be scoped to correct service: '{SERVICE}'.")));
        }
        if auth.terminator != "aws4_request" {
            return Err(invalid("Credential should be scoped with a valid terminator: 'aws4_request'."));
        }
        // The signer always signs host (and, in the header, x-amz-date); a client that did not
        // sign them (or did not send them) cannot match, and the signer needs a host.
        let required: &[&str] = if expires.is_some() { &["host"] } else { &["host", "x-amz-date"] };
        for &required in required {
            if !auth.signed_headers.contains(&required) || !headers.contains_key(required) {
                return Err(invalid(format!("'{required}' must be a signed header")));
            }
        }
        let mut signed = Vec::new();
        for name in &auth.signed_headers {
            if name.is_empty() || *name != name.to_ascii_lowercase() {
                return Err(incomplete(format!("SignedHeaders entry '{name}' is not a lowercase header name")));
            }
            let values = headers.get_all(*name);
            if values.iter().next().is_none() {
                return Err(invalid(format!("The signed header '{name}' is not in the request")));
            }
            for v in values {
                let v = v.to_str().map_err(|_| invalid(format!("The signed header '{name}' is not ASCII")))?;
                signed.push((*name, v));
            }
        }
        let expected = match (&presigned, expires) {
            (Some(p), Some(seconds)) => {
                let presign = Presign { query: &p.rest, expires: Duration::from_secs(seconds), token };
                self.signature_with(
                    method,
                    uri,
                    &signed,
                    body,
                    (auth.access_key, &key.secret),
                    date,
                    SERVICE,
                    Some(presign),
                )?
            }
            _ => self.signature(method, uri, &signed, body, (auth.access_key, &key.secret), date, SERVICE)?,
        };
        if bool::from(expected.as_bytes().ct_eq(auth.signature.as_bytes())) {
            Ok(())
        } else {
            Err(invalid(
                "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
            ))
        }
    }

    /// The key `access_key` names, if it is known and not expired.
    fn key(&self, access_key: &str, now: SystemTime) -> Result<&Key, ApiError> {
        let Some(key) = self.credentials.keys.get(access_key) else {
            return Err(invalid_token());
        };
        if key.expires.is_some_and(|e| now >= e) {
            return Err(expired_token());
        }
        Ok(key)
    }

    /// The signature `aws-sigv4` computes for the request with the signed headers only.
    #[allow(clippy::too_many_arguments)]
    fn signature(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &[(&str, &str)],
        body: &[u8],
        key: (&str, &str),
        time: SystemTime,
        service: &str,
    ) -> Result<String, ApiError> {
        self.signature_with(method, uri, headers, body, key, time, service, None)
    }

    /// [`Verifier::signature`], or with `presign` that of a presigned request: the signer adds
    /// the query's signature parameters (and the session token) to the rest of its query.
    #[allow(clippy::too_many_arguments)]
    fn signature_with(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &[(&str, &str)],
        body: &[u8],
        (access_key, secret): (&str, &str),
        time: SystemTime,
        service: &str,
        presign: Option<Presign<'_>>,
    ) -> Result<String, ApiError> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SignatureLocation, SigningSettings, sign};
        let token = presign.as_ref().and_then(|p| p.token).map(str::to_owned);
        let creds = aws_credential_types::Credentials::new(access_key, secret, token, None, "wfc-serve");
        let identity = aws_smithy_runtime_api::client::identity::Identity::from(creds);
        let mut settings = SigningSettings::default();
        // Sign exactly what the client listed: the default settings would drop user-agent and
        // the like, which some clients do sign.
        settings.excluded_headers = None;
        if let Some(p) = &presign {
            settings.signature_location = SignatureLocation::QueryParams;
            settings.expires_in = Some(p.expires);
        }
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| invalid(format!("cannot verify the signature: {e}")))?
            .into();
        let path_and_query = match &presign {
            Some(p) if !p.query.is_empty() => format!("{}?{}", uri.path(), p.query),
            Some(_) => uri.path().to_owned(),
            None => uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
        };
        let request =
            SignableRequest::new(method.as_str(), &path_and_query, headers.iter().copied(), SignableBody::Bytes(body))
                .map_err(|e| invalid(format!("cannot verify the signature: {e}")))?;
        let (_, signature) =
            sign(request, &params).map_err(|e| invalid(format!("cannot verify the signature: {e}")))?.into_parts();
        Ok(signature)
    }
}

/// What makes a signature a presigned request's.
struct Presign<'a> {
    /// The query without the signature's parameters.
    query: &'a str,
    expires: Duration,
    token: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's `get-vanilla` test vector (the SigV4 test suite): the key, date, request and
    /// signature AWS publishes, here for service `service` in us-east-1.
    #[test]
    fn accepts_aws_get_vanilla_vector_and_refuses_changes() {
        let creds = Credentials::parse("AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "test").unwrap();
        let mut verifier = Verifier::new(creds, "us-east-1");
        let date = "20150830T123600Z";
        let signature = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature={signature}"
        );
        let mut headers = HeaderMap::new();
        headers.insert("host", "example.amazonaws.com".parse().unwrap());
        headers.insert("x-amz-date", date.parse().unwrap());
        headers.insert("authorization", auth.parse().unwrap());
        let now = parse_amz_date(date).unwrap() + Duration::from_secs(60);
        let uri: Uri = "/".parse().unwrap();
        // The vector is for signing name "service": the signer agrees with AWS's signature.
        let signed = [("host", "example.amazonaws.com"), ("x-amz-date", date)];
        let computed = verifier
            .signature(
                &Method::GET,
                &uri,
                &signed,
                b"",
                ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                parse_amz_date(date).unwrap(),
                "service",
            )
            .unwrap();
        assert_eq!(computed, signature);
        // The whole path with service "states" refuses it for the scope (service "service").
        let e = verifier.verify(&Method::GET, &uri, &headers, b"", now).unwrap_err();
        assert_eq!(e.code, "InvalidSignatureException", "{e}");
        assert!(e.message.contains("correct service"), "{e}");
        // Another region is refused too.
        verifier.region = "eu-west-1".into();
        let e = verifier.verify(&Method::GET, &uri, &headers, b"", now).unwrap_err();
        assert!(e.message.contains("valid region"), "{e}");
    }

    fn signed_request(secret: &str, date: SystemTime, body: &[u8]) -> HeaderMap {
        let verifier = Verifier::new(Credentials::parse(&format!("AKID:{secret}"), "t").unwrap(), "us-east-1");
        let date_value = amz_date(date);
        let headers = [
            ("host", "127.0.0.1:8083"),
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", "AWSStepFunctions.ListStateMachines"),
            ("x-amz-date", date_value.as_str()),
        ];
        let signature = verifier
            .signature(&Method::POST, &"/".parse().unwrap(), &headers, body, ("AKID", secret), date, SERVICE)
            .unwrap();
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(k, v.parse().unwrap());
        }
        let scope = &date_value[..8];
        map.insert(
            "authorization",
            format!("AWS4-HMAC-SHA256 Credential=AKID/{scope}/us-east-1/states/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={signature}")
                .parse()
                .unwrap(),
        );
        map
    }

    #[test]
    fn refuses_unsigned_unknown_wrong_and_skewed_requests() {
        let verifier = Verifier::new(Credentials::parse("AKID:right\n# other\nOTHER:x", "t").unwrap(), "us-east-1");
        let now = SystemTime::now();
        let uri: Uri = "/".parse().unwrap();
        let body = br#"{"maxResults": 1}"#;
        let verify = |h: &HeaderMap, body: &[u8]| verifier.verify(&Method::POST, &uri, h, body, now);
        let good = signed_request("right", now, body);
        assert_eq!(verify(&good, body), Ok(()));
        // The body is signed: another body does not match.
        assert_eq!(verify(&good, b"{}").unwrap_err().code, "InvalidSignatureException");
        // So is each signed header.
        let mut h = good.clone();
        h.insert("x-amz-target", "AWSStepFunctions.StartExecution".parse().unwrap());
        assert_eq!(verify(&h, body).unwrap_err().code, "InvalidSignatureException");
        // Unsigned.
        let mut h = good.clone();
        h.remove("authorization");
        assert_eq!(verify(&h, body).unwrap_err().code, "UnrecognizedClientException");
        // A wrong secret.
        assert_eq!(verify(&signed_request("wrong", now, body), body).unwrap_err().code, "InvalidSignatureException");
        // An unknown key.
        let mut h = good.clone();
        let a = h["authorization"].to_str().unwrap().replace("AKID/", "NOBODY/");
        h.insert("authorization", a.parse().unwrap());
        assert_eq!(verify(&h, body).unwrap_err().code, "UnrecognizedClientException");
        // Old and future dates, correctly signed.
        let old = signed_request("right", now - Duration::from_secs(3600), body);
        let e = verify(&old, body).unwrap_err();
        assert_eq!(e.code, "InvalidSignatureException");
        assert!(e.message.starts_with("Signature expired"), "{e}");
        let future = signed_request("right", now + Duration::from_secs(3600), body);
        assert!(verify(&future, body).unwrap_err().message.starts_with("Signature not yet current"));
        // Within the skew is fine.
        assert_eq!(verify(&signed_request("right", now - Duration::from_secs(600), body), body), Ok(()));
        // A malformed header.
        let mut h = good.clone();
        h.insert("authorization", "AWS4-HMAC-SHA256 Credential=AKID".parse().unwrap());
        assert_eq!(verify(&h, body).unwrap_err().code, "IncompleteSignatureException");
        let mut h = good.clone();
        h.insert("authorization", "Basic dXNlcjpwYXNz".parse().unwrap());
        assert_eq!(verify(&h, body).unwrap_err().code, "IncompleteSignatureException");
        // SigV4a (an ECDSA signature over a region set, for multi-Region endpoints) is refused
        // with AWS's error for an algorithm the endpoint does not take: the AWS SDKs sign Step
        // Functions requests with SigV4, and SigV4a keys are derived, not configured.
        let mut h = good;
        h.insert("x-amz-region-set", "*".parse().unwrap());
        h.insert(
            "authorization",
            "AWS4-ECDSA-P256-SHA256 Credential=AKID/20240301/states/aws4_request, SignedHeaders=host;x-amz-date;x-amz-region-set, Signature=3045022100ab"
                .parse()
                .unwrap(),
        );
        let e = verify(&h, body).unwrap_err();
        assert_eq!(e.code, "IncompleteSignatureException");
        assert!(e.message.starts_with("Unsupported signing algorithm 'AWS4-ECDSA-P256-SHA256'"), "{e}");
    }

    #[test]
    fn parses_credentials() {
        let c = Credentials::parse("# keys\nA1:s1\n\n B2 : s2 , C3:s:3\n", "f").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c.keys["C3"].secret, "s:3");
        assert!(Credentials::parse("", "f").unwrap_err().contains("no credentials"));
        assert!(Credentials::parse("A1", "f").unwrap_err().contains("f, line 1"));
        assert!(Credentials::parse("A1:x\nA1:y", "f").unwrap_err().contains("twice"));
        assert!(!format!("{c:?}").contains("s1"));
        // Temporary credentials: a session token, and an expiry.
        let c = Credentials::parse("T1:s1 token=tok/en+1= expires=2030-01-02T03:04:05Z\nT2:s2 token=t2", "f").unwrap();
        assert_eq!(c.keys["T1"].token.as_deref(), Some("tok/en+1="));
        assert_eq!(
            c.keys["T1"].expires,
            Some(SystemTime::from("2030-01-02T03:04:05Z".parse::<jiff::Timestamp>().unwrap()))
        );
        assert_eq!((c.keys["T2"].token.as_deref(), c.keys["T2"].expires), (Some("t2"), None));
        assert!(Credentials::parse("T1:s1 expires=2030-01-01T00:00:00Z", "f").unwrap_err().contains("need a token"));
        assert!(Credentials::parse("T1:s1 token=t expires=soon", "f").unwrap_err().contains("RFC 3339"));
        assert!(Credentials::parse("T1:s1 color=red", "f").unwrap_err().contains("unknown 'color=red'"));
    }
}
