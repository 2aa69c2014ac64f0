package dev.berth.engine.image;

/** An image operation was refused or failed; the message says what was wrong, with the value, and nothing was kept. */
public class ImageException extends Exception {
    public ImageException(String message) { super(message); }
    public ImageException(String message, Throwable cause) { super(message, cause); }
}
