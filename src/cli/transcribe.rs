//! `hearth transcribe FILE`: what is said in an audio file, on stdout; and
//! `hearth say TEXT -o FILE`: a text spoken into a voice note. How long
//! each took goes to stderr.

use std::path::Path;
use std::process::ExitCode;

use crate::chat::Audio;
use crate::config::Config;
use crate::speech::Speech;

pub async fn run(config: &Config, file: &Path, language: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut config = config.clone();
    if let Some(language) = language {
        config.voice.language = Some(language.to_ascii_lowercase()).filter(|l| l != "auto");
    }
    let limits = crate::speech::audio_limits(&config.voice);
    let size = std::fs::metadata(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?
        .len();
    if size > limits.max_bytes as u64 {
        anyhow::bail!(crate::voice::VoiceError::TooLarge {
            mb: size.div_ceil(1 << 20),
            limit: (limits.max_bytes >> 20) as u64,
        });
    }
    let bytes =
        std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let speech = Speech::new(&config);
    let heard = speech.transcribe(&Audio::file(bytes), None).await?;
    println!("{}", heard.text);
    eprintln!(
        "hearth: {:.1} s of audio ({}) transcribed in {:.2} s, real-time factor {:.3}",
        heard.audio_seconds,
        heard.language,
        heard.elapsed.as_secs_f64(),
        heard.real_time_factor()
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn say(config: &Config, text: &str, output: &Path) -> anyhow::Result<ExitCode> {
    let text = if text == "-" {
        let mut read = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut read)?;
        read
    } else {
        text.to_string()
    };
    if text.trim().is_empty() {
        anyhow::bail!("there is nothing to say: the text is empty");
    }
    let spoken = Speech::new(config).say(&text, None).await?;
    std::fs::write(output, &spoken.ogg)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
    eprintln!(
        "hearth: {:.1} s of speech made in {:.2} s, real-time factor {:.3}: {}",
        spoken.seconds,
        spoken.elapsed.as_secs_f64(),
        spoken.elapsed.as_secs_f64() / spoken.seconds.max(1e-9),
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}
