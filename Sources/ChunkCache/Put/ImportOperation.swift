import FileIO
import Foundation
import LMDBKit

/// An import whose domain exists: what ``ChunkCache/import(_:fromDirectoryAt:copy:)`` returns, at the
/// moment the seed's completion handler runs. The directory is the store's by then (moved into its staging
/// area, unless `copy`); its items are taken in in the background, to `importDidFinish`.
public final class ImportOperation: Sendable {
    /// The new domain.
    public let domain: String
    private let task: Task<ImportResult, any Error>

    init(domain: String, task: Task<ImportResult, any Error>) {
        self.domain = domain
        self.task = task
    }

    /// Waits for the end of the import: every item in (or reported in ``ImportResult/failures``) and
    /// `importDidFinish` recorded. Cancelling the wait does not stop the import.
    /// - Throws: The error that stopped the import as a whole (a store that cannot be written, a tree that
    ///   cannot be listed): the domain keeps what was published, and the import resumes on the next open or
    ///   with ``ChunkCache/resumeImports()``.
    public func result() async throws -> ImportResult { try await task.value }
}
