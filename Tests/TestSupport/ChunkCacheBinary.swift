import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The built `chunkcache` and `chunkcache-bench` executables, for tests that run them as subprocesses.
public enum ChunkCacheBinary {
    /// The path of `chunkcache`, or `nil` when none is found: `$CHUNKCACHE_BIN` when set, else the one built
    /// beside the tests.
    public static let path: String? = locate("chunkcache", unlessSetIn: "CHUNKCACHE_BIN")

    /// The path of `chunkcache-bench`, or `nil` when none is found: `$CHUNKCACHE_BENCH_BIN` when set, else the
    /// one built beside the tests.
    public static let benchPath: String? = locate("chunkcache-bench", unlessSetIn: "CHUNKCACHE_BENCH_BIN")

    /// The executable `name` of this package: the one beside the running test executable (built in the same
    /// scratch folder, so it matches these sources); else the newest `.build*/debug/NAME` under the package root.
    /// The environment's `variable`, when set, names it instead.
    private static func locate(_ name: String, unlessSetIn variable: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment[variable], !explicit.isEmpty { return explicit }
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(
                URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(name).path)
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name).path)
        for candidate in candidates where isExecutableFile(candidate) { return candidate }
        // Walk up from this file to the package root (the folder with Package.swift).
        var root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while root.path != "/"
            && !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path)
        {
            root = root.deletingLastPathComponent()
        }
        let scratch = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
            .filter { $0 == ".build" || $0.hasPrefix(".build-") }
            .map { root.path + "/" + $0 + "/debug/" + name }
            .filter(isExecutableFile)
        return scratch.max { modificationTime($0) < modificationTime($1) }
    }

    private static func isExecutableFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
    }

    private static func modificationTime(_ path: String) -> Double {
        var st = stat()
        guard stat(path, &st) == 0 else { return 0 }
        return Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
    }
}
