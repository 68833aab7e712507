//! `hearth status`: every store of the data folder beside the limit that
//! bounds it, the room left on its disk, and where the mail channel left
//! its mailbox. Reads without writing, so it works while the daemon runs.

use std::process::ExitCode;

use crate::config::Config;

pub fn run(config: &Config) -> anyhow::Result<ExitCode> {
    let lines = crate::retention::usage(config);
    print!(
        "{}",
        crate::retention::render(
            &format!("data folder {}", config.data_dir.display()),
            &lines
        )
    );
    match crate::disk::free_bytes(&config.data_dir) {
        Ok(free) => println!(
            "  free on its disk: {:.1} GiB",
            free as f64 / (1u64 << 30) as f64
        ),
        Err(e) => println!("  free on its disk: cannot tell ({e})"),
    }
    if let Some(email) = &config.email {
        let dir = config.data_dir.join(crate::channels::email::NAME);
        println!(
            "mail channel {} ({}:{} in, {}:{} out): {}",
            email.address,
            email.imap_host,
            email.imap_port,
            email.smtp_host,
            email.smtp_port,
            crate::channels::email::describe(&dir)
        );
    }
    if let Some(matrix) = &config.matrix {
        let dir = config.data_dir.join(crate::channels::matrix::NAME);
        println!(
            "matrix channel {} on {}: {}",
            matrix.user,
            matrix.homeserver,
            crate::channels::matrix::describe(&dir)
        );
    }
    Ok(ExitCode::SUCCESS)
}
