package dev.berth.proxy;

/** The operator config file is invalid; the message says where and what. */
public final class ConfigException extends Exception {
    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
