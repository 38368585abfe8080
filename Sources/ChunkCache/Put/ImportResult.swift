import FileIO
import Foundation

/// What an import (``ChunkCache/import(_:fromDirectoryAt:copy:)``) or a reimport took in.
public struct ImportResult: Sendable, Hashable {
    public var domain: String
    /// Regular files, folders and symlinks recorded as items.
    public var files: Int, folders: Int, symlinks: Int
    /// The sum of the files' sizes.
    public var logicalBytes: Int64
    /// Chunks the store did not have before.
    public var newChunks: Int
    /// The new domain's version.
    public var domainVersion: DomainVersion
    /// Whether the source directory is gone from the user's side: it was moved into the store and all of
    /// it imported (false with `copy`, or when something of it was not imported).
    public var sourceRemoved: Bool
    /// Where what was not imported of a moved directory is now, and what to do: it goes back to the
    /// directory's path (``failures`` says why each entry failed), or stays in the store's staging area
    /// when that path exists again. `nil` when everything was imported or `copy` kept the directory. The
    /// domain holds what was imported either way.
    public var sourceRemovalError: String?
    /// Files already in the store with the same parent, name, size and modification time (the item's, or
    /// the time an earlier reimport found the file holding the same bytes): not read (<doc:FileProviderRules#G1>).
    public var matchedFiles: Int = 0
    /// The import's epoch finished (false when a reimport joined it and another process runs it).
    public var finished: Bool = true
    /// The entries that could not be taken in (a file replaced, unreadable or changed while it was read),
    /// each also announced through ``ChunkCache/observeImportFailures(_:)`` as it happened. The rest of
    /// the import went on: a failed entry never undoes the domain.
    public var failures: [ImportFailure] = []
}
