//! hearth-documents: the files people send, read on the box and found again
//! by the page they came from.
//!
//! A document comes from anyone allowed to write to the assistant, so it is
//! never parsed in the process that holds the model and the chats:
//!
//! - [`kind`]: what a file is, by its bytes (not its name);
//! - [`cage`]: reading it in a contained process (hearth's OS sandbox, no
//!   network, only its own folder, memory, CPU, time and output capped):
//!   poppler's `pdftotext` for PDF, hearth's own [`inside`] reader for
//!   DOCX, HTML and text;
//! - [`inside`]: what runs in that process (`hearth extract-document`);
//! - [`chunk`]: pages cut into pieces a prompt can hold, each knowing its page;
//! - [`store`]: `documents.sqlite3`, the pieces by person, searched with FTS5;
//! - [`fetched`]: which version of each file hearth fetched itself (course
//!   files) it keeps;
//! - [`meaning`]: a vector per piece, and search by meaning fused with words;
//! - [`context`]: what a turn is given of a document: the whole of a short
//!   one, or the pieces that answer the question, each with its file and page;
//! - `documents_search` ([`DocumentsSearch`]): the agent's tool over them;
//! - [`library`]: the pipeline's seam, a message's documents read and kept
//!   and the turn's context from them.

pub mod cage;
pub mod chunk;
pub mod context;
pub mod fetched;
pub mod inside;
pub mod kind;
pub mod library;
pub mod meaning;
pub mod store;
mod tool;

pub use cage::{Cage, CageLimits, ExtractError, Extracted};
pub use chunk::Chunk;
pub use context::{Cited, DOCUMENT_HEADER, TurnLimits};
pub use fetched::Fetch;
pub use kind::Kind;
pub use library::{AddError, Library, Unread, Whose};
pub use store::{DocumentError, DocumentStore, FILE, Found, Listed, forget_beyond};
pub use tool::DocumentsSearch;
