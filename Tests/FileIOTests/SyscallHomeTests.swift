import FileIO
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every system call goes through FileIO (or the C libraries' own wrappers, LMDBKit and
/// ZstdKit, and FuseKit for FUSE's): the rest of Sources imports no platform module and names none of the
/// calls that used to be made directly.
@Suite struct SyscallHomeTests {
    /// The repository's Sources folder, found from this file's path.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources").path

    /// The modules that may import the platform's C library: FileIO, the one door, and the wrappers of C
    /// libraries whose types are the platform's (LMDB's, zstd's, libfuse's) or that are C themselves.
    static let platformModules: Set<String> = ["FileIO", "LMDBKit", "FuseKit", "ZstdKit", "CLinuxShims"]

    /// An import of the platform's C library, under any of its names (Linux's glibc or musl, Apple's, Android's,
    /// Windows'), also of one symbol of it or re-exported.
    static let platformImport =
        #"^\s*(@_exported\s+)?import\s+((typealias|struct|class|enum|protocol|let|var|func)\s+)?(Glibc|Musl|Darwin|Bionic|Android|ucrt|WinSDK)\b"#

    @Test(
        "Platform calls behind one door: no module outside FileIO, LMDBKit, FuseKit, ZstdKit and CLinuxShims imports Glibc (or Musl, Darwin or another platform C library)"
    )
    func platformImportsOnlyInPlatformModules() throws {
        let walker = try #require(FileManager.default.enumerator(atPath: Self.sources))
        let files = walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        let modules = Set(files.compactMap { $0.split(separator: "/").first.map(String.init) })
        #expect(Self.platformModules.subtracting(["CLinuxShims"]).isSubset(of: modules), "found \(modules.sorted())")
        let checked = modules.subtracting(Self.platformModules)
        #expect(
            checked.isSuperset(of: ["ChunkCache", "ChunkCacheMount", "ChunkCacheCommands", "OriginKit", "chunkcache"]),
            "checked \(checked.sorted())")
        var found: [String] = []
        for file in files {
            guard let module = file.split(separator: "/").first, checked.contains(String(module)) else { continue }
            let text = try String(contentsOfFile: Self.sources + "/" + file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.range(of: Self.platformImport, options: .regularExpression) != nil {
                found.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// Calls that belong in FileIO, as they were written outside it.
    static let calls: [(name: String, pattern: String)] = [
        ("usleep", #"(?<![\w.])usleep\("#), ("madvise", #"(?<![\w.])madvise\("#), ("fopen", #"(?<![\w.])fopen\("#),
        ("sysconf", #"(?<![\w.])sysconf\("#), ("signal", #"(?<![\w.])signal\("#), ("raise", #"(?<![\w.])raise\("#),
        ("isatty", #"(?<![\w.])isatty\("#), ("a dispatch signal source", #"makeSignalSource\("#),
        ("FileManager's removeItem", #"FileManager\.default\.removeItem"#),
        ("FileManager's fileExists", #"FileManager\.default\.fileExists"#),
        ("posix_spawn", #"(?<![\w.])posix_spawn"#), ("waitpid", #"(?<![\w.])waitpid\("#),
        ("dup2", #"(?<![\w.])dup2\("#), ("fcntl", #"(?<![\w.])fcntl\("#), ("getuid", #"(?<![\w.])getuid\("#),
        ("getgid", #"(?<![\w.])getgid\("#),
    ]

    /// The Swift files under Sources outside FileIO, relative to Sources.
    static func swiftFilesOutsideFileIO() throws -> [String] {
        let walker = try #require(FileManager.default.enumerator(atPath: sources))
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") && !$0.hasPrefix("FileIO/") }
    }

    @Test(
        "Every system call goes through FileIO: no source outside FileIO calls usleep, madvise, fopen, sysconf, signal, raise, isatty, a dispatch signal source, FileManager's removeItem or fileExists, posix_spawn, waitpid, dup2, fcntl, getuid or getgid (through Foundation's re-export of the C library either)"
    )
    func noDirectSystemCalls() throws {
        let files = try Self.swiftFilesOutsideFileIO()
        #expect(files.count > 50, "found the sources at \(Self.sources)")
        var found: [String] = []
        for file in files {
            let text = try String(contentsOfFile: Self.sources + "/" + file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }  // documentation may name a call
                for call in Self.calls where code.range(of: call.pattern, options: .regularExpression) != nil {
                    found.append("\(file):\(number + 1): \(call.name)")
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test(
        "Every system call goes through FileIO: MappedPages finds where this process mapped a file (what LMDBKit read with fopen of /proc/self/maps) and drops its pages"
    )
    func mappedPages() throws {
        let folder = try FileSystem.canonicalPath(
            try FileSystem.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "chunkcache-maps."))
        defer { try? FileSystem.removeTree(folder) }
        let path = folder + "/data.mdb"
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        defer { try? file.close() }
        try file.resize(to: 1 << 20)
        let mapped = try #require(mmap(nil, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, file.rawValue, 0))
        defer { munmap(mapped, 1 << 20) }
        mapped.storeBytes(of: 42, as: UInt8.self)
        #expect(MappedPages.start(ofMappingOf: path) == mapped)
        #expect(MappedPages.start(ofMappingOf: folder + "/other.mdb") == nil)
        MappedPages.drop(mapped, count: 1 << 20)
        #expect(mapped.load(as: UInt8.self) == 42, "a shared file mapping's pages fault back in")
        #expect(ThisProcess.pageSize == Int(getpagesize()))
    }

    @Test(
        "Every system call goes through FileIO: FileSystem.removeTree removes a folder and everything in it, and removes symbolic links without following them"
    )
    func removeTree() throws {
        let folder = try FileSystem.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "chunkcache-tree.")
        let outside = try FileSystem.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "chunkcache-outside.")
        defer { try? FileSystem.removeTree(outside) }
        try FileSystem.makeDirectory(folder + "/a", mode: 0o700)
        try FileSystem.makeDirectory(folder + "/a/b", mode: 0o700)
        try FileDescriptor.open(folder + "/a/b/f", O_WRONLY | O_CREAT).close()
        try FileDescriptor.open(outside + "/kept", O_WRONLY | O_CREAT).close()
        #expect(symlink(outside, folder + "/a/link") == 0)
        try FileSystem.removeTree(folder)
        #expect(throws: Errno.noSuchFile) { try FileSystem.status(folder) }
        #expect((try? FileSystem.status(outside + "/kept")) != nil, "the link's target is untouched")
    }
}
