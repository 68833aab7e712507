//! `hearth bench --stdio`: the engine driven request by request from
//! outside, so another system can be measured turn by turn beside it
//! (`benches/compare.sh` alternates hearth and llama-server this way).
//!
//! Each line on stdin is one JSON object, `{"requests": [{"conversation":
//! …, "messages": [{"role": …, "content": …}], "max_tokens": …}, …]}`;
//! the requests of a line are submitted together. Each is answered by one
//! line on stdout: per reply its time to first text, its total time,
//! prompt, cached and generated tokens and the text, and the line's wall
//! time. A line that does not parse is answered with `{"error": …}`.

use std::process::ExitCode;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::bench::{start, stop};
use crate::chat::{ChatMessage, ChatRequest, SamplingParams, StreamEvent};
use crate::config::Config;
use crate::engine::{Engine, EngineSettings};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    requests: Vec<Request>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    conversation: String,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
}

#[derive(Debug, Serialize)]
struct Answer {
    replies: Vec<Figures>,
    wall_ms: f64,
}

#[derive(Debug, Serialize)]
struct Figures {
    ttft_ms: f64,
    total_ms: f64,
    prompt_tokens: u32,
    cached_tokens: u32,
    completion_tokens: u32,
    text: String,
}

pub async fn run(config: &Config, slots: Option<u32>) -> anyhow::Result<ExitCode> {
    let base = crate::engine_setup::engine_settings(config)?;
    let scratch = std::env::temp_dir().join(format!("hearth-bench-{}", std::process::id()));
    let engine = start(EngineSettings {
        slots: slots.unwrap_or(base.slots),
        // Plain decoding, as llama-server's by default.
        speculation: crate::engine::Speculation::Off,
        kv_dir: Some(scratch.clone()),
        ..base
    })
    .await?;
    eprintln!("ready: {} sequences", engine.info().slots);
    let result = serve(&engine).await;
    stop(engine).await;
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(engine: &Engine) -> anyhow::Result<()> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Line>(&line) {
            Ok(line) => match answer(engine, line).await {
                Ok(a) => serde_json::to_string(&a)?,
                Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
            },
            Err(e) => serde_json::json!({ "error": format!("bad request line: {e}") }).to_string(),
        };
        out.write_all(answer.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
    }
    Ok(())
}

async fn answer(engine: &Engine, line: Line) -> anyhow::Result<Answer> {
    let started = Instant::now();
    let replies = line.requests.into_iter().map(|r| reply(engine, r, started));
    let replies = futures::future::join_all(replies)
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Answer {
        replies,
        wall_ms: started.elapsed().as_secs_f64() * 1e3,
    })
}

async fn reply(engine: &Engine, r: Request, started: Instant) -> anyhow::Result<Figures> {
    let request = ChatRequest::new(
        &r.conversation,
        r.messages,
        SamplingParams::greedy(r.max_tokens),
    );
    let ms = || started.elapsed().as_secs_f64() * 1e3;
    let mut stream = engine.submit(request, CancellationToken::new());
    let (mut ttft, mut text) = (None, String::new());
    while let Some(event) = stream.next().await {
        match event {
            StreamEvent::TextDelta(delta) => {
                ttft.get_or_insert_with(ms);
                text.push_str(&delta);
            }
            StreamEvent::Done { usage, .. } => {
                let total_ms = ms();
                return Ok(Figures {
                    ttft_ms: ttft.unwrap_or(total_ms),
                    total_ms,
                    prompt_tokens: usage.prompt_tokens,
                    cached_tokens: usage.cached_tokens,
                    completion_tokens: usage.completion_tokens,
                    text,
                });
            }
            StreamEvent::Error(e) => return Err(e.into()),
            _ => {}
        }
    }
    anyhow::bail!("the engine stopped mid-reply")
}
