import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` with a new, empty directory under `parent`, checks that `body` left nothing open in it, and
/// deletes it afterwards.
///
/// The path is canonical (`realpath`) because LMDBKit's `Environment.open(directory:maxDatabases:mapSize:)`
/// keys its registry by the path as given. A directory that cannot be removed is recorded as an issue.
///
/// The leak check: once `body` returns, no file descriptor of this process may point inside the directory
/// and no LMDB read transaction may be open on an environment inside it (``Leaks``), after a grace of a few
/// seconds for background jobs to let go of a store. What remains is recorded as an issue naming it, so a test
/// whose stores live in its temporary directory fails when it leaks a descriptor or a reader. A body that
/// throws is not checked: its test fails anyway.
/// - Parameters:
///   - parent: The directory to make it in; the temp directory unless given.
///   - checkingLeaks: Whether to check for leaks (default); `false` for a body that hands what it opened on.
///   - body: Runs with the new directory's path.
/// - Returns: What `body` returns.
/// - Throws: A `POSIXError` when the directory cannot be made, or what `body` throws.
@discardableResult
public func withTemporaryDirectory<R>(
    in parent: String = NSTemporaryDirectory(), checkingLeaks: Bool = true, _ body: (String) throws -> R
) throws -> R {
    let directory = try makeTemporaryDirectory(in: parent)
    defer { removeTemporaryDirectory(directory) }
    let result = try body(directory)
    if checkingLeaks { expectNoLeaks(in: directory) }
    return result
}

/// Runs the asynchronous `body` with a new, empty directory under `parent`, and deletes it afterwards.
///
/// The same as the synchronous `withTemporaryDirectory(in:_:)`, for bodies that await.
@discardableResult
public func withTemporaryDirectory<R>(
    in parent: String = NSTemporaryDirectory(), checkingLeaks: Bool = true, _ body: (String) async throws -> R
) async throws -> R {
    let directory = try makeTemporaryDirectory(in: parent)
    defer { removeTemporaryDirectory(directory) }
    let result = try await body(directory)
    if checkingLeaks { await expectNoLeaks(in: directory) }
    return result
}

/// Makes a new directory under `parent` and returns its canonical path. Uses `mkdtemp(3)` and `realpath(3)`.
private func makeTemporaryDirectory(in parent: String) throws -> String {
    var template = Array((parent + "/chunkcache-tests.XXXXXX").utf8CString)
    return try template.withUnsafeMutableBufferPointer { buffer in
        guard let made = mkdtemp(buffer.baseAddress!), let canonical = realpath(made, nil) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        defer { free(canonical) }
        return String(cString: canonical)
    }
}

/// Deletes `directory` and everything in it, recording an issue when that fails.
private func removeTemporaryDirectory(_ directory: String) {
    do { try FileManager.default.removeItem(atPath: directory) } catch {
        Issue.record("could not remove \(directory): \(error)")
    }
}
