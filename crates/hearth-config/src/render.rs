//! The resolved configuration as TOML, for `hearth config check`.
//!
//! Secrets print masked (see [`super::Secret`]); unset optional keys print as
//! comments so the output doubles as a reminder of what can be set.

use std::fmt::Write;

use super::{Config, ConfigSource, Secret};

impl Config {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let source = match &self.source {
            ConfigSource::File(p) => p.display().to_string(),
            ConfigSource::Defaults => "built-in defaults (no config file found)".to_string(),
        };
        let _ = writeln!(out, "# resolved from {source}\n");
        self.render_engine(&mut out);
        self.render_agent(&mut out);
        self.render_generation(&mut out);
        let _ = writeln!(
            out,
            "[data]\ndir = {}\n",
            quote(&self.data_dir.display().to_string())
        );
        let _ = writeln!(out, "[log]\nlevel = {}\n", quote(&self.log_level));
        self.memory.render(&mut out);
        self.retention.render(&mut out);
        self.models.render(&mut out);
        self.scheduler.render(&mut out);
        self.voice.render(&mut out);
        self.mcp.render(&mut out);
        let _ = writeln!(out, "{}", self.telegram.render());
        if let Some(email) = &self.email {
            let _ = writeln!(out, "{}", email.render());
        }
        if let Some(matrix) = &self.matrix {
            let _ = writeln!(out, "{}", matrix.render());
        }
        self.gateway.render(&mut out);
        self.openai.render(&mut out);
        self.anthropic.render(&mut out);
        self.lms.render(&mut out);
        out.push('\n');
        self.brief.render(&mut out);
        self.heartbeat.render(&mut out);
        out.push('\n');
        super::daemon::render(&mut out, &self.daemon, &self.routing);
        out
    }

    /// `[model]` and `[engine]`.
    fn render_engine(&self, out: &mut String) {
        let m = &self.model;
        let _ = writeln!(out, "[model]\npath = {}", quote(&m.path));
        match &m.chat_template {
            Some(t) => {
                let _ = writeln!(out, "chat_template = {}", quote(t));
            }
            None => out.push_str("# chat_template: the model's own\n"),
        }
        let _ = writeln!(
            out,
            "context_size = {}\nthreads = {}\nbatch_size = {}\nflash_attention = \"{}\"",
            m.context_size,
            m.threads,
            m.batch_size,
            m.flash_attention.as_str()
        );
        let gpu = match m.gpu_layers {
            super::GpuLayers::Auto => "\"auto\"".to_string(),
            super::GpuLayers::Count(n) => n.to_string(),
        };
        let format = m.tool_format.map_or("auto", |f| f.name());
        let _ = writeln!(out, "gpu_layers = {gpu}\ntool_format = \"{format}\"");
        if let Some(mmproj) = &m.mmproj {
            let _ = writeln!(out, "mmproj = {}", toml::Value::from(mmproj.as_str()));
        }
        let _ = writeln!(
            out,
            "image_max_mb = {}\nimage_max_pixels = {}\nimages_per_message = {}\n",
            m.image_max_mb, m.image_max_pixels, m.images_per_message
        );
        let e = &self.engine;
        let _ = writeln!(
            out,
            "[engine]\nslots = {}\nram_cache_mb = {}\ndisk_cache_mb = {}\nprompt_cache = {}\nreuse_min_chunk = {}\nshare_prompts = {}\nswa_full = {}\nswa_checkpoints = {}\n",
            e.slots,
            e.ram_cache_mb,
            e.disk_cache_mb,
            e.prompt_cache,
            e.reuse_min_chunk,
            e.share_prompts,
            e.swa_full,
            e.swa_checkpoints
        );
        let s = &e.speculation;
        let _ = writeln!(
            out,
            "speculative = \"{}\"\ndraft_tokens = {}",
            s.mode.as_str(),
            s.draft_tokens
        );
        if let Some(draft) = &s.draft_model {
            let _ = writeln!(out, "draft_model = {}", quote(draft));
        }
        if !e.rpc_servers.is_empty() {
            let servers: Vec<String> = e.rpc_servers.iter().map(|s| quote(s)).collect();
            let _ = writeln!(out, "rpc_servers = [{}]", servers.join(", "));
        }
        if let Some(mb) = e.gpu_memory_mb {
            let _ = writeln!(out, "gpu_memory_mb = {mb}");
        }
        if let Some(dir) = &e.backends_dir {
            let _ = writeln!(
                out,
                "backends_dir = {}\n",
                quote(&dir.display().to_string())
            );
        }
    }

    /// `[agent]`.
    fn render_agent(&self, out: &mut String) {
        let a = &self.agent;
        let autonomy = match a.autonomy {
            hearth_sandbox::policy::Autonomy::ReadOnly => "readonly",
            hearth_sandbox::policy::Autonomy::Supervised => "supervised",
            hearth_sandbox::policy::Autonomy::Full => "full",
        };
        let commands: Vec<String> = a.allowed_commands.iter().map(|c| quote(c)).collect();
        let domains: Vec<String> = a.http_allowed_domains.iter().map(|d| quote(d)).collect();
        let dispatcher = match a.tool_dispatcher {
            super::DispatcherChoice::Auto => "auto",
            super::DispatcherChoice::Xml => "xml",
            super::DispatcherChoice::Native => "native",
        };
        let _ = writeln!(
            out,
            "[agent]\nworkspace = {}\nshared_workspace = {}\nautonomy = \"{autonomy}\"\nallowed_commands = [{}]\ntool_timeout_secs = {}\ntool_output_chars = {}\nmax_actions_per_hour = {}\nmax_tool_iterations = {}\ntool_dispatcher = \"{dispatcher}\"\nparallel_tools = {}\nhttp_allowed_domains = [{}]\nhttp_max_bytes = {}\nsandbox = \"{}\"\nsandbox_network = {}\nsandbox_memory_mb = {}\nsandbox_max_processes = {}\napprove = [{}]\napproval_timeout_secs = {}\n",
            quote(&a.workspace.display().to_string()),
            a.shared_workspace,
            commands.join(", "),
            a.tool_timeout_secs,
            a.tool_output_chars,
            a.max_actions_per_hour,
            a.max_tool_iterations,
            a.parallel_tools,
            domains.join(", "),
            a.http_max_bytes,
            a.sandbox.name(),
            a.sandbox_network,
            a.sandbox_memory_mb,
            a.sandbox_max_processes,
            a.approve
                .iter()
                .map(|t| quote(t))
                .collect::<Vec<_>>()
                .join(", "),
            a.approval_timeout_secs
        );
        if let Some(n) = a.tools_per_turn {
            let _ = writeln!(out, "tools_per_turn = {n}");
        }
    }

    /// `[generation]`.
    fn render_generation(&self, out: &mut String) {
        let g = &self.generation;
        let _ = writeln!(
            out,
            "[generation]\nmax_tokens = {}\ntemperature = {}\ntop_p = {}\ntop_k = {}\nmin_p = {}\nrepeat_penalty = {}",
            g.max_tokens, g.temperature, g.top_p, g.top_k, g.min_p, g.repeat_penalty
        );
        match g.seed {
            Some(s) => {
                let _ = writeln!(out, "seed = {s}");
            }
            None => out.push_str("# seed: random per reply\n"),
        }
        let _ = writeln!(
            out,
            "system_prompt = {}\nreasoning = \"{}\"\nmax_reasoning_tokens = {}\n",
            quote(&g.system_prompt),
            g.reasoning.as_str(),
            g.max_reasoning_tokens
        );
    }
}

pub(super) fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

pub(super) fn secret_line(key: &str, secret: &Option<Secret>) -> String {
    match secret {
        Some(s) => format!("{key} = \"{s}\""),
        None => format!("# {key}: not set"),
    }
}
