//! Secret masking: credentials are replaced with `[secret:KIND]` before a
//! message or tool output is hashed, stored or sent.
//!
//! Rules in this order: credentials recognisable by their shape (`shapes`:
//! prefixes such as `AKIA`, `ghp_`, `sk-ant-`, PEM blocks,
//! `scheme://user:pass@`), then gitleaks' maintained rules (`gitleaks`), both
//! everywhere; then, in tool output only, values named like secrets (`named`,
//! docs/DIGESTS.md, "Masking secrets"). `literal` says what a value looks
//! like (a placeholder, a reference, code) for all three. A value an earlier
//! rule masked is left to it. Bare hex and ids are no shape, so git SHAs, `b3:` ids, uuids
//! and sha256 digests stay. Every pattern runs on the `regex` crate's
//! automata: linear in the input.

mod gitleaks;
mod literal;
mod named;
mod shapes;

use regex::{Captures, Regex};
use std::borrow::Cow;
use std::ops::Range;

use gitleaks::GITLEAKS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecretKind {
    PrivateKey,
    AwsAccessKey,
    AwsSecretKey,
    GcpApiKey,
    AzureKey,
    GithubToken,
    GitlabToken,
    SlackToken,
    AnthropicKey,
    OpenaiKey,
    StripeKey,
    NpmToken,
    SendgridKey,
    Jwt,
    UrlPassword,
    /// The password of `curl -u user:…` or of an `Authorization` header.
    BasicAuth,
    /// The value of a variable or key named like a secret: `DB_PASSWORD=…`.
    NamedSecret,
    /// What one of gitleaks' rules finds, by the rule's id.
    Gitleaks(&'static str),
}

impl SecretKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private-key",
            SecretKind::AwsAccessKey => "aws-access-key",
            SecretKind::AwsSecretKey => "aws-secret-key",
            SecretKind::GcpApiKey => "gcp-api-key",
            SecretKind::AzureKey => "azure-key",
            SecretKind::GithubToken => "github-token",
            SecretKind::GitlabToken => "gitlab-token",
            SecretKind::SlackToken => "slack-token",
            SecretKind::AnthropicKey => "anthropic-key",
            SecretKind::OpenaiKey => "openai-key",
            SecretKind::StripeKey => "stripe-key",
            SecretKind::NpmToken => "npm-token",
            SecretKind::SendgridKey => "sendgrid-key",
            SecretKind::Jwt => "jwt",
            SecretKind::UrlPassword => "url-password",
            SecretKind::BasicAuth => "basic-auth",
            SecretKind::NamedSecret => "named-secret",
            SecretKind::Gitleaks(id) => id,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Masked<'a> {
    pub text: Cow<'a, str>,
    /// One entry per masked secret, in the order the rules found them.
    pub found: Vec<SecretKind>,
}

fn shannon_entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in v.bytes() {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum()
}

const MARK_PREFIX: &str = "[secret:";

/// Whether `text` holds a mask put in place of a secret.
pub fn is_masked(text: &str) -> bool {
    text.contains(MARK_PREFIX)
}

/// Where a text comes from, which decides the rules that apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// What the user and the model wrote: messages and tool-call arguments.
    /// Only credentials recognisable by their shape are masked: a value the
    /// user shared by name ("use access token 'abc123'") is shown, in the
    /// prose and in the arguments the model later passes it in alike, so the
    /// assistant can still do what it was asked with it.
    Conversation,
    /// What tools returned (files, env dumps, logs): secrets nobody chose to
    /// share. Values named like secrets are masked too.
    ToolOutput,
}

impl Source {
    /// A tool message holds a tool's output; every other role, conversation.
    pub fn of(role: crate::message::Role) -> Source {
        match role {
            crate::message::Role::Tool => Source::ToolOutput,
            _ => Source::Conversation,
        }
    }
}

/// A message as it is stored and sent: its content masked as its role's
/// source, its tool-call arguments as conversation.
pub fn mask_message(mut m: crate::message::Message) -> crate::message::Message {
    m.content = mask(&m.content, Source::of(m.role)).text.into_owned();
    for c in &mut m.tool_calls {
        c.arguments = mask(&c.arguments, Source::Conversation).text.into_owned();
    }
    m
}

/// `text` with every secret replaced by `[secret:KIND]`.
pub fn mask(text: &str, source: Source) -> Masked<'_> {
    let mut current: Cow<str> = Cow::Borrowed(text);
    let mut found = Vec::new();
    for rule in shapes::RULES.iter() {
        current = replace(current, &rule.pattern, rule.kind, &mut found, |_, c| {
            (rule.accept)(c).then(|| value_range(c))
        });
    }
    current = mask_gitleaks(current, &mut found);
    if source == Source::ToolOutput {
        for rule in named::RULES.iter() {
            current = replace(
                current,
                &rule.pattern,
                SecretKind::NamedSecret,
                &mut found,
                |_, c| (rule.secret)(c),
            );
        }
    }
    Masked {
        text: current,
        found,
    }
}

/// `text` with what gitleaks' rules find masked, less the placeholders
/// their patterns also match (`curl -H "Authorization: Bearer YOUR_TOKEN"`
/// in a docstring).
fn mask_gitleaks<'t>(mut text: Cow<'t, str>, found: &mut Vec<SecretKind>) -> Cow<'t, str> {
    for rule in GITLEAKS.candidates(&text) {
        let kind = SecretKind::Gitleaks(&rule.id);
        text = replace(text, &rule.regex, kind, found, |text, c| {
            GITLEAKS
                .secret(rule, text, c)
                .filter(|s| !literal::stand_in(literal::unquoted(&text[s.clone()]).0))
        });
    }
    text
}

/// Where the value of group `s` is in the text, inside its quotes if it has them.
fn value_range(c: &Captures) -> Range<usize> {
    let s = c.name("s").expect("every rule names its secret `s`");
    let quotes = usize::from(literal::literal(c).1);
    s.start() + quotes..s.end() - quotes
}

/// `text` with the secret of each match of `pattern` masked as `kind`; the
/// secret is where `secret`, given the text and the match, says it is in the
/// text (`None`: the match is none).
fn replace<'t>(
    text: Cow<'t, str>,
    pattern: &Regex,
    kind: SecretKind,
    found: &mut Vec<SecretKind>,
    secret: impl Fn(&str, &Captures) -> Option<Range<usize>>,
) -> Cow<'t, str> {
    let replaced = pattern.replace_all(&text, |c: &Captures| {
        let whole = c.get(0).unwrap();
        // A value another rule already masked stays as it is (and the word
        // `secret` in a mask is no secret's name).
        let Some(s) = (!whole.as_str().contains(MARK_PREFIX))
            .then(|| secret(&text, c))
            .flatten()
        else {
            return whole.as_str().to_string();
        };
        found.push(kind);
        let w = whole.as_str();
        format!(
            "{}{MARK_PREFIX}{}]{}",
            &w[..s.start - whole.start()],
            kind.as_str(),
            &w[s.end - whole.start()..]
        )
    });
    match replaced {
        Cow::Owned(s) => Cow::Owned(s),
        Cow::Borrowed(_) => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_each_kind() {
        let cases = [
            (
                "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
                "AWS_ACCESS_KEY_ID=[secret:aws-access-key]",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [secret:aws-secret-key]",
            ),
            (
                "key=AIzaSyA1234567890abcdefghijklmnopqrstuv",
                "key=[secret:gcp-api-key]",
            ),
            (
                "AccountName=a;AccountKey=abcdEFGH1234abcdEFGH1234==;End",
                "AccountName=a;AccountKey=[secret:azure-key];End",
            ),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "token [secret:github-token]",
            ),
            ("glpat-abcdefghij0123456789", "[secret:gitlab-token]"),
            ("xoxb-123456789012-abcdefABCDEF", "[secret:slack-token]"),
            (
                "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
                "[secret:anthropic-key]",
            ),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz", "[secret:openai-key]"),
            (
                "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop",
                "Bearer [secret:jwt]",
            ),
            (
                "postgres://app:hunter22@db:5432/x",
                "postgres://app:[secret:url-password]@db:5432/x",
            ),
            (
                "DB_PASSWORD=correcthorse",
                "DB_PASSWORD=[secret:named-secret]",
            ),
            (
                "  client_secret: \"abc123xyz\"",
                "  client_secret: \"[secret:named-secret]\"",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----",
                "[secret:private-key]",
            ),
            // A URL with an empty user keeps no password either.
            (
                "REDIS_URL=redis://:UDqa7Rk2wq9@localhost:6379/0",
                "REDIS_URL=redis://:[secret:url-password]@localhost:6379/0",
            ),
            // Config lines take any literal; code and prose a secret-like one.
            (
                "export API_TOKEN='s3cr3t-v4lue'",
                "export API_TOKEN='[secret:named-secret]'",
            ),
            (
                "  password: hunter2hunter",
                "  password: [secret:named-secret]",
            ),
            (
                r#"{"name": "deploy", "token": "a8Fk29dlQpz3"}"#,
                r#"{"name": "deploy", "token": "[secret:named-secret]"}"#,
            ),
            (
                "my access token is 'abc123def456ghi'",
                "my access token is '[secret:named-secret]'",
            ),
            (
                "conn(password=\"Tr0ub4dor&3\")",
                "conn(password=\"[secret:named-secret]\")",
            ),
            // Assignments in the forms code and build files write them.
            (
                r#"var deployToken string = "q8Xv2Lm9Rt4Kw7Zp""#,
                r#"var deployToken string = "[secret:named-secret]""#,
            ),
            (
                r#"System.setProperty("DEPLOY_TOKEN", "q8Xv2Lm9Rt4Kw7Zp")"#,
                r#"System.setProperty("DEPLOY_TOKEN", "[secret:named-secret]")"#,
            ),
            (
                r#"DEPLOY_TOKEN ::= "q8Xv2Lm9Rt4Kw7Zp""#,
                r#"DEPLOY_TOKEN ::= "[secret:named-secret]""#,
            ),
            (
                r#"DEPLOY_TOKEN ?= "q8Xv2Lm9Rt4Kw7Zp""#,
                r#"DEPLOY_TOKEN ?= "[secret:named-secret]""#,
            ),
            (
                r#"<add key="SmtpPassword" value="q8Xv2Lm9Rt4Kw7Zp"/>"#,
                r#"<add key="SmtpPassword" value="[secret:named-secret]"/>"#,
            ),
            (
                "<deployToken>\n    q8Xv2Lm9Rt4Kw7Zp\n</deployToken>",
                "<deployToken>\n    [secret:named-secret]\n</deployToken>",
            ),
            (
                r#"{"app.ini": "DEPLOY_TOKEN=q8Xv2Lm9Rt4Kw7Zp\nDEBUG=true"}"#,
                r#"{"app.ini": "DEPLOY_TOKEN=[secret:named-secret]\nDEBUG=true"}"#,
            ),
            // A key cut short by `head -3`: no END line.
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx3Ry9P1jqtEYkYLxwiZcBcSZxiKt2oFGnxQfVDIhPbQAAAJjE7gXaxO4F\n$ ls",
                "[secret:private-key]\n$ ls",
            ),
            (
                "curl -u deploy:Dpl0y-S3cret https://ci.internal/api",
                "curl -u deploy:[secret:basic-auth] https://ci.internal/api",
            ),
            (
                "Authorization: Basic ZGVwbG95OkRwbDB5LVMzY3JldA==",
                "Authorization: Basic [secret:basic-auth]",
            ),
            // A JWT in base64, a Kubernetes secret's data, a webhook (gitleaks' rules).
            (
                "JWT=ZXlKaGJHY2lPaUpJVXpJMU5pSjkuZXlKcGMzTWlPaUpxYjJVaUxBMEtJQ0psZUhBaU9qRXpNREE0TVRrek9EQXNEUW9nSW1oMGRIQTZMeTlsZUdGdGNHeGxMbU52YlM5cGMxOXliMjkwSWpwMGNuVmxmUS5kQmpmdEplWjRDVlAtbUI5MksyN3VoYlVKVTFwMXJfd1cxZ0ZXRk9Falhr",
                "JWT=[secret:jwt-base64]",
            ),
            (
                "kind: Secret\ndata:\n  password: cDRzc3cwcmQtUzNjcmV0LTk5\n",
                // gitleaks' secret group holds the key with its value.
                "kind: Secret\ndata:\n  [secret:kubernetes-secret-yaml]\n",
            ),
            (
                "curl -X POST https://hooks.slack.com/services/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",
                "curl -X POST [secret:slack-webhook-url]",
            ),
            // Known prefixes, unquoted (gitleaks' rules).
            (
                "HF_TOKEN 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",
                "HF_TOKEN [secret:huggingface-access-token]",
            ),
            // Passwords as config files write them: camel case, a bare
            // `pass`, a number after the name, `#`, `,` and `:` inside, a
            // leading `!` or `%`, a compose item quoted whole or in a flow
            // list, JSON on one line, `declare -x`.
            (
                "rootPass: Gx7!kd#2",
                "rootPass: [secret:named-secret]",
            ),
            (
                "    pass: 'w1ld#Card'",
                "    pass: '[secret:named-secret]'",
            ),
            (
                "DB_PASSWORD_2=%Qx9z!w",
                "DB_PASSWORD_2=[secret:named-secret]",
            ),
            (
                "export SMTP_PASS=ab,cd#12:x,",
                "export SMTP_PASS=[secret:named-secret]",
            ),
            (
                "PASSWORD=!castle6060",
                "PASSWORD=[secret:named-secret]",
            ),
            (
                "vault_password: violet.Maple4691",
                "vault_password: [secret:named-secret]",
            ),
            (
                "      - \"MYSQL_PASSWORD=two words 9\"",
                "      - \"MYSQL_PASSWORD=[secret:named-secret]\"",
            ),
            (
                "    environment: [\"REDIS_PASSWORD=r3d!s#x\"]",
                "    environment: [\"REDIS_PASSWORD=[secret:named-secret]\"]",
            ),
            (
                r#"{"db":{"user":"app","password":"sunny day now"}}"#,
                r#"{"db":{"user":"app","password":"[secret:named-secret]"}}"#,
            ),
            (
                "declare -x ADMIN_PWD='Adm1n$x'",
                "declare -x ADMIN_PWD='[secret:named-secret]'",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(mask(input, Source::ToolOutput).text, want, "{input}");
        }
    }

    #[test]
    fn leaves_hashes_and_ids_alone() {
        let keep = [
            "commit 11f6ad8ec52a2984abaafd7c3b516503785c2072",
            "blob b3:594e519ae499",
            "id b9d676ad-2a4a-4b72-953a-0e2240de0d1f",
            "sha256:a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa",
            "max_tokens: 4000",
            "PWD=/home/runner/work",
            "token_uri: https://oauth2.googleapis.com/token",
            "see https://example.com:8080/path",
            // Source code: identifiers, types, paths, calls, keywords, placeholders.
            "    pub bracket_token: token::Bracket,",
            "use crate::job_token::JobToken,",
            "  constructor(token: string, options?: Options) {",
            "    password: string;",
            "    continuationToken: string;",
            "        token = self.next()",
            "    def login(self, user='', passwd='', acct=''):",
            "        token = kwargs.get('token')",
            "let token = tokens.next();",
            "PASSWORD=${DB_PASSWORD}",
            "api_key: <your-api-key>",
            "password = None",
            "secret_key: Optional[str] = None",
            "  token: TokenKind;",
            "the token expired yesterday",
            "access_token = response.json()['access_token']",
            "    self.secret = secret",
            // Placeholders, references and settings beside passwords.
            "curl -u <user:password> https://test.com/endpoint",
            "DB_PASSWORD=$DB_PASS",
            "  password: *default_password",
            "  master_password: !Ref MasterPassword",
            "MAIL_AUTH=plain",
            "OLDPWD=/home/runner",
            "notes = \"Maven - io.jsonwebtoken:jjwt-jackson-0.11.2\"",
            "csrf-token=Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7+V4eUrLfpuyOuxmiW9rhROG/Whikle15syazJOk",
            "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----",
            // A key named `token` or `password` in code, its value no secret:
            // a style table's colour, a paginator's field name, a type, a
            // reference, a call, a format field, a doc's stand-in.
            "        Token:                  '#f8f8f2',",
            "        Token.Keyword:          'bold #000',",
            "        Token:                  '',",
            "        \"input_token\": \"next_token\",",
            "            'AWS_SECRET_ACCESS_KEY': 'secret_key',",
            "ACL_CREDENTIALS = \"Access-Control-Allow-Credentials\"",
            "    force_pass: match env::var(\"INSTA_FORCE_PASS\").as_deref() {",
            "        secret: \"sensitive_value\".into(),",
            "        private_key: &[u8],",
            "        secret: &OkmBlock,",
            "        fn_token: Token![fn],",
            "    if isinstance(self.private_key, X25519PrivateKey):",
            "        bytes_hash_to_token: FnvHashMap<u32, u32>,",
            "            Token::U32(123),",
            "    long_auth = 'username:' + 'password'*10",
            "    raise SyntaxError(f'Syntax error; token: \"{current_phrase}\"')",
            "    out.write('password={0}\\n'.format(signature))",
            "    events={'(?i)password':'secret\\n'}",
            "    ('--jobserver-auth=3,4 -j2', Some('3,4')),",
            "    >>> fetch('https://api.example.com/v1/me?access_token=YOUR_ACCESS_TOKEN')",
            "    >>> fetch('https://example.com/api?access_token=token123&page=2')",
            "    curl -H \"Authorization: Bearer YOUR_TOKEN\" https://api.example.com/v1/me",
            "        Authorization: Bearer <token>",
            "        Authorization: Bearer ACCESS_TOKEN",
            "        Authorization: Bearer os.environ[\"TOKEN\"]",
            "    PASSWORD = \"PASSWORD\"",
            "PASS: t/basic.sh",
            "pub const ER_BUS_MISSING_COMPRESSION_TOKEN: QStatus = 36947i32;",
        ];
        for text in keep {
            let masked = mask(text, Source::ToolOutput);
            assert_eq!(masked.text, text);
            assert!(masked.found.is_empty(), "{text}");
        }
    }

    #[test]
    fn the_conversation_keeps_values_shared_by_name_and_loses_shaped_credentials() {
        // The same value in prose and in the arguments that pass it on: both
        // shown, or (a credential by its shape) both masked.
        for text in [
            "use my access token 'abc123def456ghi' for the booking",
            r#"{"access_token": "abc123def456ghi", "card": "c1"}"#,
        ] {
            assert_eq!(mask(text, Source::Conversation).text, text);
            assert_ne!(mask(text, Source::ToolOutput).text, text);
        }
        for text in [
            "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            r#"{"token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}"#,
        ] {
            let masked = mask(text, Source::Conversation);
            assert!(
                masked.text.contains("[secret:github-token]"),
                "{}",
                masked.text
            );
        }
    }

    #[test]
    fn reports_what_it_found() {
        let masked = mask(
            "A=AKIAIOSFODNN7EXAMPLE\nB=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            Source::ToolOutput,
        );
        assert_eq!(
            masked.found,
            vec![SecretKind::AwsAccessKey, SecretKind::GithubToken]
        );
    }
}
