//! The one way an enum that the wire names by a word (`as_str` / `parse`)
//! is serialised: as that word; a word it does not know is an error that
//! lists the ones it does (`expected user, assistant, tool or system, got
//! "bot"`), which the service's parser prefixes with the field.

/// Implements `Serialize` and `Deserialize` for `$ty` through its
/// `as_str` and `parse`; the variants listed are the words the error names.
#[macro_export]
macro_rules! wire_name {
    ($ty:ident: $($variant:ident),+ $(,)?) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                let word = <String as serde::Deserialize>::deserialize(d)?;
                $ty::parse(&word).ok_or_else(|| {
                    let words = [$($ty::$variant.as_str()),+];
                    serde::de::Error::custom($crate::wire_name::expected(&words, &word))
                })
            }
        }
    };
}

/// `expected a, b or c, got "d"`.
pub fn expected(words: &[&str], got: &str) -> String {
    let list = match words {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    format!("expected {list}, got {got:?}")
}

#[cfg(test)]
mod tests {
    use crate::message::Role;

    #[test]
    fn a_word_reads_back_and_an_unknown_one_names_the_words() {
        let role: Role = serde_json::from_str("\"tool\"").unwrap();
        assert_eq!(role, Role::Tool);
        assert_eq!(serde_json::to_string(&Role::System).unwrap(), "\"system\"");
        let e = serde_json::from_str::<Role>("\"bot\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("expected user, assistant, tool or system, got \"bot\""),
            "{e}"
        );
    }
}
