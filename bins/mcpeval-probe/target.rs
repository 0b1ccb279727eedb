//! The server a run reaches, and the credit binding of that choice: a
//! command is pinned (its executable and file arguments hashed before
//! launch, checked again after), an endpoint is fingerprinted from its
//! configuration alone. Neither raw arguments nor header values leave here
//! except towards the server itself.

use std::path::PathBuf;

use mcp::{Launch, Remote, Target};
use shared::Result;
use shared::manifest::{Case, Manifest};
use store::binding::{self, Pinned};
use store::salt::Salt;

use crate::PROGRAM;
use crate::args::{Config, Server};

/// A target ready to run, with its binding.
pub struct Prepared {
    pub target: Target,
    pub pinned: Pinned,
    /// The server's name in journal records when its handshake gives none.
    pub fallback_server: String,
}

/// Pins the binding of `case` against the configured server and builds
/// the target the probe client reaches.
pub fn prepare(
    salt: &Salt,
    manifest: &Manifest,
    case: &Case,
    config: &Config,
    evaluator: &[u8; 32],
) -> Result<Prepared> {
    let client = (PROGRAM.to_owned(), env!("CARGO_PKG_VERSION").to_owned());
    match &config.server {
        Server::Command(command) => {
            let pinned = binding::pin(salt, manifest, case, command, evaluator)?;
            let arg0 = command[0].clone();
            let launch = Launch {
                program: pinned
                    .program
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&arg0)),
                arg0: arg0.clone(),
                args: command[1..].to_vec(),
                inherit_stderr: config.server_stderr,
                client,
            };
            Ok(Prepared {
                target: Target::Stdio(launch),
                pinned,
                fallback_server: store::credit::command_name(&arg0),
            })
        }
        Server::Endpoint(endpoint) => Ok(Prepared {
            pinned: binding::pin_endpoint(salt, manifest, case, endpoint, evaluator),
            fallback_server: endpoint.host_port(),
            target: Target::Http(Remote {
                endpoint: endpoint.clone(),
                client,
            }),
        }),
    }
}
