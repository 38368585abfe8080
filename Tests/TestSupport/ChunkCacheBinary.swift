import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The built `chunkcache` executable, for tests that run it as a subprocess.
public enum ChunkCacheBinary {
    /// Its path, or `nil` when none is found.
    ///
    /// `$CHUNKCACHE_BIN` when set; else the `chunkcache` beside the running test executable (built in the same
    /// scratch folder, so it matches these sources); else the newest `.build*/debug/chunkcache` under the
    /// package root.
    public static let path: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["CHUNKCACHE_BIN"], !explicit.isEmpty { return explicit }
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(
                URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("chunkcache").path)
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("chunkcache").path)
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
            .map { root.path + "/" + $0 + "/debug/chunkcache" }
            .filter(isExecutableFile)
        return scratch.max { modificationTime($0) < modificationTime($1) }
    }()

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
