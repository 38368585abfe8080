import ChunkCacheCommands
import Foundation
import TestSupport
import Testing

@Suite("§7 issue 20: a fast CLI start")
struct CLIStartTests {
    /// Every place a command could put a store when none is named: `$CHUNKCACHE_STORE`, `$XDG_CACHE_HOME`
    /// and `~/.cache`, all inside `dir`.
    private func storeEnvironment(_ dir: String) throws -> [String: String?] {
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: false)
        return ["HOME": dir + "/home", "XDG_CACHE_HOME": dir + "/xdg", "CHUNKCACHE_STORE": dir + "/env-store"]
    }

    /// What `dir` holds, every level down.
    private func tree(_ dir: String) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: dir).sorted()
    }

    @Test("§7 issue 20: --version prints the version (with --json, {\"version\"}), exits 0 and creates no store")
    func versionTouchesNoStore() throws {
        try withTemporaryDirectory { dir in
            let env = try storeEnvironment(dir)
            for arguments in [
                ["--version"], ["--store", dir + "/store", "--version"], ["--tmp-grace", "0", "--version"],
            ] {
                let result = try runCLI(arguments, env: env)
                #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                #expect(result.stdout == ChunkCacheCommand.version + "\n", "\(result)")
                #expect(result.stderr.isEmpty, "\(result)")
            }
            let json = try runCLI(["--json", "--version"], env: env)
            #expect(json.exitCode == 0, "\(json)")
            #expect(try json.json().count == 1)
            #expect(try json.json().string("version") == ChunkCacheCommand.version)
            #expect(ChunkCacheCommand.version.split(separator: ".").count == 3, "a semantic version")
            #expect(try tree(dir) == ["home"], "no store appeared anywhere")
        }
    }

    @Test("§7 issue 20: --help, COMMAND --help and help COMMAND print help, exit 0 and create no store")
    func helpTouchesNoStore() throws {
        try withTemporaryDirectory { dir in
            let env = try storeEnvironment(dir)
            for arguments in [
                ["--help"], ["fetch", "--help"], ["help", "fetch"], ["--store", dir + "/store", "put", "--help"],
            ] {
                let result = try runCLI(arguments, env: env)
                #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                #expect(result.stdout.contains("USAGE: chunkcache"), "\(result)")
            }
            #expect(try tree(dir) == ["home"], "no store appeared anywhere")
        }
    }
}
