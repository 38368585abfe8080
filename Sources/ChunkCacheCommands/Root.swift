import ChunkCache
