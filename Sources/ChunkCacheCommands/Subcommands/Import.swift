import ArgumentParser
import ChunkCache
import Foundation

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take a directory hierarchy into a new domain, or resume imports a crash interrupted.",
        discussion:
            "By default the directory is moved into the store first (a rename: it must be on the store's filesystem), and what could not be imported goes back to its path; --copy reads it in place and leaves it. An import killed part-way resumes with `import --resume` (or the next library open), matching what it had stored by name, size and time."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The directory to import.")
    var directory: String?

    @Option(help: "The new domain's name.")
    var domain: String?

    @Flag(help: "Leave the directory in place.")
    var copy = false

    @Flag(help: "Resume every import whose process died, instead of starting one.")
    var resume = false

    func validate() throws {
        if resume {
            if directory != nil || domain != nil || copy {
                throw ValidationError("--resume takes no directory, --domain or --copy")
            }
            return
        }
        guard let directory, domain != nil else {
            throw ValidationError("give the directory to import and --domain (or --resume)")
        }
        // An empty path would mean the current directory to URL(fileURLWithPath:): never import that by accident.
        if directory.isEmpty { throw ValidationError("<directory> is empty; give the directory to import") }
    }

    func run() async throws {
        let cache = try await global.openCache()
        if resume {
            let results = try await cache.resumeImports()
            global.emit(
                .object([("resumed", .array(results.map(\.json)))]),
                summary: results.isEmpty ? "no interrupted import" : results.map(\.summary).joined(separator: "\n"))
            return
        }
        let (directory, domain) = (self.directory ?? "", self.domain ?? "")
        let started = try await cache.import(domain, fromDirectoryAt: URL(fileURLWithPath: directory), copy: copy)
        let result = try await started.result()
        // The domain exists and holds the rest: warnings, not an error, and the exit code stays 0.
        for failure in result.failures {
            warn("domain \(domain): \(failure.path ?? directory) was not imported: \(failure.error.message)")
        }
        if let reason = result.sourceRemovalError { warn("domain \(domain) was imported, but \(reason)") }
        global.emit(result.json, summary: "imported \(directory) as " + result.summary)
    }

    private func warn(_ line: String) {
        FileHandle.standardError.write(Data("chunkcache: warning: \(line)\n".utf8))
    }
}

extension ImportResult {
    var json: JSON {
        .object([
            ("domain", .string(domain)), ("files", .int(Int64(files))), ("folders", .int(Int64(folders))),
            ("symlinks", .int(Int64(symlinks))), ("logicalBytes", .int(logicalBytes)),
            ("newChunks", .int(Int64(newChunks))), ("matchedFiles", .int(Int64(matchedFiles))),
            ("domainVersion", domainVersion.json),
            ("importFinished", .bool(finished)),
            ("sourceRemovalError", sourceRemovalError.map { .string($0) } ?? .null),
            (
                "failures",
                .array(
                    failures.map { failure in
                        .object([
                            ("path", failure.path.map { .string($0) } ?? .null),
                            ("code", .string(failure.error.code.name)), ("message", .string(failure.error.message)),
                        ])
                    })
            ),
        ])
    }

    var summary: String {
        "domain \(domain): \(files) files (\(matchedFiles) already stored), \(folders) folders, \(symlinks) symlinks, \(formatSize(logicalBytes)), \(newChunks) new chunks; domain version \(domainVersion)\(finished ? "" : " (still importing)")\(failures.isEmpty ? "" : "; \(failures.count) not imported")"
    }
}
