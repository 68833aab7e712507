//! Every integration test in one binary, so llama.cpp is linked once rather
//! than once per file. Each module below was a test file of its own; they
//! share `common` (the real binary in an isolated environment, the test
//! models) and `support` (fakes that speak the real protocols on 127.0.0.1).
//! `cargo test --test all MODULE::` runs one of them.
#![allow(clippy::unwrap_used)] // tests: an unwrap is the clearest failure

mod common;
mod support;

mod acp;
mod anthropic_provider;
mod api_clients_apart;
mod approvals;
mod architecture;
mod backends;
mod backup;
mod batching;
mod chat_pty;
mod cli_errors;
mod config_cli;
mod copied_calls;
mod crash;
mod daemon_cli;
mod dispatch;
mod engine;
mod file_tools;
mod formats;
mod full_disk;
mod gateway;
mod gateway_brake;
mod gateway_people;
mod grammar_handoff;
mod hostile_tools;
mod http_tool;
mod internal_tags;
mod lms_calendar;
mod lms_canvas;
mod lms_delivery;
mod lms_moodle;
mod make_gpu;
mod make_install;
mod mcp_client;
mod mcp_hostile;
mod mcp_memory;
mod mcp_npx;
mod mcp_serve;
mod mcp_uvx;
mod mcp_venv;
mod memory_cron_cli;
mod models_cli;
mod models_kinds;
mod moved_reuse;
mod openai_api;
mod openai_families;
mod openai_images;
mod openai_provider;
mod parallel_calls;
mod pipeline_phases;
mod published_templates;
mod real_model;
mod rpc_device;
mod sandbox;
mod sandbox_io_uring;
mod sandbox_servers;
mod scenarios;
mod security;
mod services;
mod sliding_window;
mod speculative;
mod sweep_cli;
mod telegram;
mod telegram_e2e;
mod telegram_pictures;
mod telegram_resilience;
mod templates;
mod templates_jinja2;
mod tools_pick;
mod trust;
mod two_people;
mod upgrade;
mod vision;
mod voice;
mod vulkan_device;
mod ways_in;
mod web_page;
mod websocket;
mod xml_parser;
