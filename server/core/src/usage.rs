//! What a model provider says it counted for its replies: plain figures,
//! summed over a request's rounds and over a session's requests. Input is
//! counted as OpenAI counts it: every token the model read, the cached ones
//! and the ones written to the cache included (`ctxproxy-model-apis` reads
//! each API's usage object into this shape).

use std::ops::AddAssign;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Every input token, cached and cache-written ones included.
    pub input: u64,
    /// Of `input`, the tokens read from the provider's prompt cache.
    pub cached_input: u64,
    /// Of `input`, the tokens written to the cache (Anthropic's
    /// `cache_creation_input_tokens`; 0 where the API does not say).
    pub cache_write: u64,
    /// Output tokens, reasoning or thinking included.
    pub output: u64,
}

impl AddAssign for Usage {
    fn add_assign(&mut self, more: Usage) {
        self.input += more.input;
        self.cached_input += more.cached_input;
        self.cache_write += more.cache_write;
        self.output += more.output;
    }
}
