FROM --platform=linux/x86_64 exec.env.x86_64.4ca4cffb2caf1cbf361ec3:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
