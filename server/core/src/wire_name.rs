//! The one way an enum that the wire names by a word (its `as_str`)
//! is serialised: as that word; a word it does not know is an error that
//! lists the ones it does (`expected user, assistant, tool or system, got
//! "bot"`), which the service's parser prefixes with the field.

/// Implements, from `$ty`'s `as_str` (the one place its words are
/// written), `$ty::VARIANTS`: the variants listed, every one of the
/// type's; `$ty::parse`, a word back to its variant; and `Serialize` and
/// `Deserialize` through both, whose error names the words. A variant that holds
/// another word's enum is listed once per value it may hold
/// (`Level(Level::Full)`), so the list is still every word.
#[macro_export]
macro_rules! wire_name {
    ($ty:ident: $($variant:ident $(($inner:path))?),+ $(,)?) => {
        impl $ty {
            /// Every variant, in the order the wire lists them.
            pub const VARIANTS: &'static [$ty] = &[$($ty::$variant $(($inner))?),+];

            /// The variant `as_str` names by `word`.
            pub fn parse(word: &str) -> Option<$ty> {
                $ty::VARIANTS.iter().copied().find(|v| v.as_str() == word)
            }
        }

        // A variant missing from the list does not compile: the match is
        // not exhaustive.
        const _: fn($ty) = |v| match v {
            $($ty::$variant $(($inner))?)|+ => {}
        };

        impl $crate::serde::Serialize for $ty {
            fn serialize<S: $crate::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::serde::Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                let word = <String as $crate::serde::Deserialize>::deserialize(d)?;
                $ty::parse(&word).ok_or_else(|| {
                    let words: Vec<&str> = $ty::VARIANTS.iter().map(|v| v.as_str()).collect();
                    $crate::serde::de::Error::custom($crate::wire_name::expected(&words, &word))
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

    /// Every variant of every enum named by a word reads back from it.
    #[test]
    fn every_word_reads_back() {
        fn round_trip<T>(variants: &[T])
        where
            T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
        {
            for v in variants {
                let word = serde_json::to_string(v).unwrap();
                assert_eq!(&serde_json::from_str::<T>(&word).unwrap(), v, "{word}");
            }
        }
        round_trip(Role::VARIANTS);
        round_trip(crate::message::UserKind::VARIANTS);
        round_trip(crate::tokens::Encoding::VARIANTS);
        round_trip(crate::config::LayerOrder::VARIANTS);
        round_trip(crate::exchange::Outcome::VARIANTS);
        round_trip(crate::context::Phase::VARIANTS);
        round_trip(crate::packer::ShapeKind::VARIANTS);
        round_trip(crate::packer::Layer::VARIANTS);
        round_trip(crate::packer::ItemForm::VARIANTS);
    }

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
