//! Hiding credentials in URLs and package specs before they reach a log
//! (shared with tracelens-driver, whose pip specs may carry tokens).

use std::sync::LazyLock;

use regex::Regex;

static USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/\s]+)(?P<pass>:[^@/\s]*)?@")
        .expect("valid")
});
static QUERY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?P<key>[?&][a-z0-9_.-]*(?:token|key|secret|password|passwd|pwd|sig|auth|credential)[a-z0-9_.-]*=)[^&#\s]*")
        .expect("valid")
});

/// `spec` with credentials masked: `https://user:***@host/...` (a lone
/// token before `@` becomes `***`), and token-like query values `***`.
pub fn redact(spec: &str) -> String {
    let masked = USERINFO.replace_all(spec, |c: &regex::Captures<'_>| {
        if c.name("pass").is_some() {
            format!("{}{}:***@", &c["scheme"], &c["user"])
        } else {
            format!("{}***@", &c["scheme"])
        }
    });
    QUERY.replace_all(&masked, "${key}***").into_owned()
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn credentials_are_masked() {
        let check = |input: &str, expected: &str| assert_eq!(redact(input), expected, "{input}");
        check(
            "git+https://user:s3cret@github.com/AMD-AGI/TraceLens@abc",
            "git+https://user:***@github.com/AMD-AGI/TraceLens@abc",
        );
        check(
            "git+https://ghp_TOKEN@github.com/AMD-AGI/TraceLens",
            "git+https://***@github.com/AMD-AGI/TraceLens",
        );
        check(
            "https://host/x.deb?X-Amz-Signature=abc&v=1&token=zz",
            "https://host/x.deb?X-Amz-Signature=***&v=1&token=***",
        );
        check(
            "git+https://github.com/AMD-AGI/TraceLens@171dd74",
            "git+https://github.com/AMD-AGI/TraceLens@171dd74",
        );
        check(
            "/opt/wheels/TraceLens-0.1.0-py3-none-any.whl",
            "/opt/wheels/TraceLens-0.1.0-py3-none-any.whl",
        );
        check(
            "TraceLens @ git+ssh://git@github.com/AMD-AGI/TraceLens",
            "TraceLens @ git+ssh://***@github.com/AMD-AGI/TraceLens",
        );
    }
}
