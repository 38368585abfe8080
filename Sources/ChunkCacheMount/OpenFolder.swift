import ChunkCache
import Synchronization

/// An open folder: where its listing continues. Listings are read a page at a time; the kernel's offsets
/// count entries, so the handle keeps the page token at each page's start and the page it read last.
struct OpenFolder: Sendable {
    let container: String
    /// The token of page `k` at index `k`; page 0 is the initial page.
    var pageStarts: [EnumerationPage] = [.initialPageSortedByName]
    /// The page read last and its number, for the sequential reads `readdir` makes.
    var lastPage: (number: Int, items: [ItemStatus], next: EnumerationPage?)?
}
