//! Building a configured provider: [`ProviderConfig::build`] picks the implementation of
//! the port (`anthropic`, `openai`). Above the port (`provider`, the vocabulary both
//! implementations speak) and its implementations, so none of them imports another in a
//! circle.

use std::sync::Arc;

use crate::anthropic::Anthropic;
use crate::error::{FailureClass, ProviderError};
use crate::openai::OpenAi;
use crate::provider::{Provider, ProviderConfig, ProviderKind};
use crate::secret::Secret;

impl ProviderConfig {
    /// Builds the provider, reading its key from the environment or the keyring now.
    pub fn build(&self) -> Result<Arc<dyn Provider>, ProviderError> {
        let denied = |e: String| {
            ProviderError::new(
                FailureClass::PermissionDenied,
                format!("provider `{}`: {e}", self.name),
            )
        };
        let key = match (&self.api_key_env, &self.api_key_keyring) {
            (None, None) => None,
            (Some(var), None) => Some(Secret::from_env(var).map_err(denied)?),
            (None, Some(r)) => Some(r.read().map_err(denied)?),
            (Some(_), Some(_)) => {
                return Err(denied(
                    "both api_key_env and api_key_keyring are set; keep one".into(),
                ));
            }
        };
        Ok(match self.kind {
            ProviderKind::OpenAi => Arc::new(OpenAi::new(self, key)?),
            ProviderKind::Anthropic => Arc::new(Anthropic::new(self, key)?),
        })
    }
}
