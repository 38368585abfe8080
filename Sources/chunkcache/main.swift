import ChunkCacheCommands
import Foundation

exit(await ChunkCacheCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
