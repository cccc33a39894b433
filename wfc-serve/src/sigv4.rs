//! SigV4 verification: with credentials configured (`wfc serve --credentials FILE`), every
//! request must carry a valid AWS Signature Version 4 `Authorization` header for one of them,
//! as AWS requires; the AWS CLI and SDKs sign every request already.
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

/// The access keys a server accepts: access key id → secret access key.
#[derive(Clone, Default)]
pub struct Credentials {
    keys: HashMap<String, String>,
}

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
    /// blank lines and lines starting with `#` are skipped. `origin` names the source in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Credentials, String> {
        let mut keys = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            for entry in line.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let at = format!("{origin}, line {}", index + 1);
                let Some((id, secret)) = entry.split_once(':') else {
                    return Err(format!("{at}: expected ACCESS_KEY_ID:SECRET_ACCESS_KEY"));
                };
                let (id, secret) = (id.trim(), secret.trim());
                if id.is_empty() || secret.is_empty() {
                    return Err(format!("{at}: the access key id and the secret must not be empty"));
                }
                if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(format!("{at}: an access key id is letters and digits only"));
                }
                if keys.insert(id.to_owned(), secret.to_owned()).is_some() {
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
/// Signature=...` header.
struct Authorization<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    terminator: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
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
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Err(unrecognized(
                "The request is not signed (no Authorization header): this server requires AWS SigV4 signed requests",
            ));
        };
        let value = value.to_str().map_err(|_| incomplete("The Authorization header is not ASCII"))?;
        let auth = parse_authorization(value)?;
        let Some(secret) = self.credentials.keys.get(auth.access_key) else {
            return Err(unrecognized("The security token included in the request is invalid."));
        };
        let Some(date_value) = headers.get("x-amz-date").and_then(|v| v.to_str().ok()) else {
            return Err(incomplete("Authorization header requires existence of a 'X-Amz-Date' header."));
        };
        let Some(date) = parse_amz_date(date_value) else {
            return Err(incomplete(format!("X-Amz-Date '{date_value}' is not YYYYMMDDTHHMMSSZ")));
        };
        if now.duration_since(date).is_ok_and(|late| late > MAX_SKEW) {
            return Err(invalid(format!(
                "Signature expired: {date_value} is now earlier than {} ({} - 15 min.)",
                amz_date(now - MAX_SKEW),
                amz_date(now)
            )));
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
        // The signer always signs host and x-amz-date; a client that did not sign them (or did
        // not send them) cannot match, and the signer needs a host to work with.
        for required in ["host", "x-amz-date"] {
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
        let expected = self.signature(method, uri, &signed, body, (auth.access_key, secret), date, SERVICE)?;
        if bool::from(expected.as_bytes().ct_eq(auth.signature.as_bytes())) {
            Ok(())
        } else {
            Err(invalid(
                "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
            ))
        }
    }

    /// The signature `aws-sigv4` computes for the request with the signed headers only.
    #[allow(clippy::too_many_arguments)]
    fn signature(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &[(&str, &str)],
        body: &[u8],
        (access_key, secret): (&str, &str),
        time: SystemTime,
        service: &str,
    ) -> Result<String, ApiError> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        let creds = aws_credential_types::Credentials::new(access_key, secret, None, None, "wfc-serve");
        let identity = aws_smithy_runtime_api::client::identity::Identity::from(creds);
        let mut settings = SigningSettings::default();
        // Sign exactly what the client listed: the default settings would drop user-agent and
        // the like, which some clients do sign.
        settings.excluded_headers = None;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| invalid(format!("cannot verify the signature: {e}")))?
            .into();
        let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
        let request =
            SignableRequest::new(method.as_str(), path_and_query, headers.iter().copied(), SignableBody::Bytes(body))
                .map_err(|e| invalid(format!("cannot verify the signature: {e}")))?;
        let (_, signature) =
            sign(request, &params).map_err(|e| invalid(format!("cannot verify the signature: {e}")))?.into_parts();
        Ok(signature)
    }
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
        let mut h = good;
        h.insert("authorization", "Basic dXNlcjpwYXNz".parse().unwrap());
        assert_eq!(verify(&h, body).unwrap_err().code, "IncompleteSignatureException");
    }

    #[test]
    fn parses_credentials() {
        let c = Credentials::parse("# keys\nA1:s1\n\n B2 : s2 , C3:s:3\n", "f").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c.keys["C3"], "s:3");
        assert!(Credentials::parse("", "f").unwrap_err().contains("no credentials"));
        assert!(Credentials::parse("A1", "f").unwrap_err().contains("f, line 1"));
        assert!(Credentials::parse("A1:x\nA1:y", "f").unwrap_err().contains("twice"));
        assert!(!format!("{c:?}").contains("s1"));
    }
}
